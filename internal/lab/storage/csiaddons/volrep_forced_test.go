package csiaddons_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

// As csi-addons with ceph-csi: a promotion while the peer's image is a reachable primary is
// refused (FailedPrecondition) and retried at once with force, so both images are primary and
// both writable. Neither mirrors to the other, and neither says so: ceph-csi finds no last sync
// in the remote status of two primaries and answers NotFound, which csi-addons takes as no
// information, leaving Replicating as it was (True on east, from before; none on west) and
// lastSyncTime where it stopped; both report Degraded False, as csi-addons reports a primary.
// A write on one never reaches the other.
func TestAPromotionWhileThePeerIsAReachablePrimaryIsForcedAndLeavesTwoWritablePrimaries(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "forced", time.Second)
	writeFile(g, volumeDir(lab.East, handle), "synced", "from east")
	mirrored(g, ctx, east, ns, class, handle)
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "east reports its mirrors")

	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionCompleted)).To(ContainSubstring("retried with force"))
	}).Should(Succeed(), "west is promoted, with force, while east is a reachable primary")
	for _, cluster := range []string{lab.East, lab.West} {
		st := imageState(g, cluster, handle)
		g.Expect(st.Role).To(Equal(storage.RolePrimary), "the image is primary on %s", cluster)
		g.Expect(st.Writable()).To(BeTrue(), "the image is writable on %s", cluster)
	}
	// east's status refreshes every second; a mirror it sent just before west's promotion is
	// reported at a refresh after it (later than a second on a loaded machine): the last sync
	// is the one that two refreshes apart show alike.
	var lastEast *metav1.Time
	g.Eventually(func(g Gomega) {
		before := getVR(g, ctx, east, ns, "data").Status.LastSyncTime
		time.Sleep(2 * time.Second)
		lastEast = getVR(g, ctx, east, ns, "data").Status.LastSyncTime
		g.Expect(lastEast).NotTo(BeNil())
		g.Expect(lastEast).To(Equal(before))
	}).Should(Succeed(), "east's last sync stops")
	g.Consistently(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(Equal("True/"+csiaddons.ReasonReplicating), "csi-addons leaves it as it was")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
		g.Expect(vr.Status.LastSyncTime).To(Equal(lastEast), "east's last sync stops")
		vr = getVR(g, ctx, west, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(BeEmpty(), "west never had replication information")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
	}).WithTimeout(3*time.Second).Should(Succeed(), "neither primary says it does not replicate")

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
	ns, class, handle := newVolume(g, ctx, east, west, "pvcprotection", time.Second)
	mirrored(g, ctx, east, ns, class, handle)
	key := client.ObjectKey{Namespace: ns, Name: "data"}
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(east.Get(ctx, key, pvc)).To(Succeed())
	g.Expect(pvc.Annotations).To(HaveKeyWithValue(csiaddons.VolumeReplicationNameAnnotation, "data"))
	g.Expect(pvc.Finalizers).To(ContainElement(csiaddons.PVCProtectionFinalizer))

	g.Expect(east.Delete(ctx, pvc)).To(Succeed())
	g.Consistently(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement(csiaddons.PVCProtectionFinalizer))
	}).WithTimeout(3*time.Second).Should(Succeed(), "the PVC stays Terminating while its VolumeReplication exists")

	g.Expect(east.Delete(ctx, getVR(g, ctx, east, ns, "data"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, key, &corev1.PersistentVolumeClaim{})
		g.Expect(err).To(HaveOccurred())
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	}).Should(Succeed(), "once the VolumeReplication is deleted, the PVC goes")
}
