package storage_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// As csi-addons with ceph-csi: a promotion while the peer's image is a reachable primary is
// refused (FailedPrecondition) and retried at once with force, so both images are primary and
// both writable. Neither mirrors to the other: each reports Replicating Unknown (a split-brain)
// and Degraded False, as csi-addons reports a primary; a write on one never reaches the other.
func TestAPromotionWhileThePeerIsAReachablePrimaryIsForcedAndLeavesTwoWritablePrimaries(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "forced", time.Second)
	writeFile(g, volumeDir(lab.East, handle), "synced", "from east")
	mirrored(g, ctx, east, ns, class)

	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + storage.ReasonPromoted))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionCompleted)).To(ContainSubstring("retried with force"))
	}).Should(Succeed(), "west is promoted, with force, while east is a reachable primary")
	for _, cluster := range []string{lab.East, lab.West} {
		st := imageState(g, cluster, handle)
		g.Expect(st.Role).To(Equal(storage.RolePrimary), "the image is primary on %s", cluster)
		g.Expect(st.Writable()).To(BeTrue(), "the image is writable on %s", cluster)
	}
	for cluster, cl := range map[string]client.Client{lab.East: east, lab.West: west} {
		g.Eventually(func(g Gomega) {
			vr := getVR(g, ctx, cl, ns, "data")
			g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(Equal("Unknown/" + storage.ReasonReplicating))
			g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionReplicating)).To(ContainSubstring("split-brain"))
			g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + storage.ReasonHealthy))
		}).Should(Succeed(), "%s reports that it cannot replicate", cluster)
	}

	writeFile(g, volumeDir(lab.East, handle), "east", "written on east after west's promotion")
	writeFile(g, volumeDir(lab.West, handle), "west", "written on west after its promotion")
	g.Consistently(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).NotTo(HaveKey("east"))
		g.Expect(readFiles(g, volumeDir(lab.East, handle))).NotTo(HaveKey("west"))
	}).WithTimeout(3*time.Second).Should(Succeed(), "for three mirror intervals, neither primary mirrors to the other")
}

// As csi-addons does, the PVC of a VolumeReplication carries the annotation naming it and the
// pvc-protection finalizer: deleted while its VolumeReplication exists, the PVC stays
// Terminating; deleting the VolumeReplication removes both, and the PVC goes.
func TestAPVCDeletedWhileItsVolumeReplicationExistsStaysTerminatingUntilTheVolumeReplicationIsDeleted(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, _ := newVolume(g, ctx, east, west, "pvcprotection", time.Second)
	mirrored(g, ctx, east, ns, class)
	key := client.ObjectKey{Namespace: ns, Name: "data"}
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(east.Get(ctx, key, pvc)).To(Succeed())
	g.Expect(pvc.Annotations).To(HaveKeyWithValue(storage.VolumeReplicationNameAnnotation, "data"))
	g.Expect(pvc.Finalizers).To(ContainElement(storage.PVCProtectionFinalizer))

	g.Expect(east.Delete(ctx, pvc)).To(Succeed())
	g.Consistently(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement(storage.PVCProtectionFinalizer))
	}).WithTimeout(3*time.Second).Should(Succeed(), "the PVC stays Terminating while its VolumeReplication exists")

	g.Expect(east.Delete(ctx, getVR(g, ctx, east, ns, "data"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, key, &corev1.PersistentVolumeClaim{})
		g.Expect(err).To(HaveOccurred())
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	}).Should(Succeed(), "once the VolumeReplication is deleted, the PVC goes")
}
