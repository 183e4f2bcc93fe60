package csiaddons_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

// ceph-csi never disables mirroring of a non-primary image: it answers success, changing
// nothing, only while the image is up+replaying, and InvalidArgument otherwise; csi-addons then
// keeps the VolumeReplication's finalizer and the PVC's pvc-protection finalizer and retries.
// Disabling mirroring of a primary makes rbd-mirror delete the peer's non-primary copy.
//
// West is the secondary of east. With east demoted too (a relocation's final sync), west
// replays nothing: deleting west's VolumeReplication is refused, and the VolumeReplication and
// the PVC's finalizer stay. East promoted again, west replays and the deletion completes; west's
// image stays, still a mirrored copy. Deleting east's VolumeReplication then disables east's
// mirroring and deletes west's copy.
func TestDeletingASecondaryVolumeReplicationIsRefusedUnlessItsImageReplays(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "unreplaying", time.Second)
	writeFile(g, volumeDir(lab.East, handle), "synced", "from east")
	mirrored(g, ctx, east, ns, class, handle)
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Secondary))).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "data"}
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(csiaddons.PVCProtectionFinalizer))
		g.Expect(getVR(g, ctx, west, ns, "data").Status.State).To(Equal(replicationv1alpha1.SecondaryState))
	}).Should(Succeed(), "west is a secondary, its PVC protected")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.East, handle).Role).To(Equal(storage.RoleSecondary))
		g.Expect(imageState(g, lab.East, handle).FinalMirrorPending).To(BeFalse())
	}).Should(Succeed(), "east is demoted and its final mirror sent")
	g.Expect(west.Delete(ctx, getVR(g, ctx, west, ns, "data"))).To(Succeed())
	g.Consistently(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.DeletionTimestamp).NotTo(BeNil())
		g.Expect(vr.Finalizers).To(ContainElement(csiaddons.VolumeReplicationFinalizer))
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(csiaddons.PVCProtectionFinalizer))
		g.Expect(got.Annotations).To(HaveKeyWithValue(csiaddons.VolumeReplicationNameAnnotation, "data"))
	}).WithTimeout(4*time.Second).Should(Succeed(), "with both sites demoted west's image does not replay: its deletion is refused")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Primary, false)
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, key, &replicationv1alpha1.VolumeReplication{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Finalizers).NotTo(ContainElement(csiaddons.PVCProtectionFinalizer))
		g.Expect(got.Annotations).NotTo(HaveKey(csiaddons.VolumeReplicationNameAnnotation))
	}).Should(Succeed(), "east primary again, west replays it and its VolumeReplication is released")
	g.Expect(imageState(g, lab.West, handle).Role).To(Equal(storage.RoleSecondary), "a released secondary is still a mirrored copy")
	g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKeyWithValue("synced", "from east"))

	g.Expect(east.Delete(ctx, getVR(g, ctx, east, ns, "data"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := imageState(g, lab.West, handle)
		g.Expect(st.Deleted).To(BeTrue())
		_, err := os.Stat(volumeDir(lab.West, handle))
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "west's copy is gone")
	}).Should(Succeed(), "disabling east's mirroring deletes west's non-primary copy")
	g.Expect(imageState(g, lab.East, handle).Role).To(Equal(storage.RoleNone))
	g.Expect(readFiles(g, volumeDir(lab.East, handle))).To(HaveKeyWithValue("synced", "from east"), "east keeps its data")
}
