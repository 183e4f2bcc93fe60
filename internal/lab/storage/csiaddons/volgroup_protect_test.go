package csiaddons_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

func getPVC(g Gomega, ctx context.Context, cl client.Client, ns, name string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
	return pvc
}

// expectMember checks that a PVC carries, or not, the group's annotation and finalizer.
func expectMember(g Gomega, pvc *corev1.PersistentVolumeClaim, member bool) {
	if member {
		g.Expect(pvc.Annotations).To(HaveKeyWithValue(csiaddons.VolumeGroupReplicationNameAnnotation, "db"))
		g.Expect(pvc.Finalizers).To(ContainElement(csiaddons.VGRProtectionFinalizer))
		return
	}
	g.Expect(pvc.Annotations).NotTo(HaveKey(csiaddons.VolumeGroupReplicationNameAnnotation))
	g.Expect(pvc.Finalizers).NotTo(ContainElement(csiaddons.VGRProtectionFinalizer))
}

// TestGroupProtectsItsPVCsAndIsDeletedAsUpstream: the group's content lists its volumes' handles
// and one VolumeReplication of dataSource kind VolumeGroupReplication drives it; member PVCs get
// the vgr-protection finalizer, a PVC labelled later joins and one unlabelled leaves; a member
// deleted stays Terminating; deleting the group deletes its VolumeReplication (disabling the
// mirroring of a primary group, so west's copies go) and its content before it releases the PVCs.
func TestGroupProtectsItsPVCsAndIsDeletedAsUpstream(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	tw := newTwins(g, ctx, east, west, "vgr-protect", time.Second)
	vgr := volumeGroupReplication(tw, replicationv1alpha1.Primary)
	g.Expect(east.Create(ctx, vgr)).To(Succeed())
	handle, content := groupHandle(g, ctx, east, tw.ns)
	g.Expect(content.Spec.Source.VolumeHandles).To(Equal(slices.Sorted(slices.Values([]string{tw.handles["a"], tw.handles["b"]}))))
	g.Expect(content.Spec.Provisioner).To(Equal(lab.BlockDriver))
	g.Eventually(func(g Gomega) {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)).To(Succeed())
		g.Expect(vgr.Finalizers).To(ContainElement(csiaddons.VGRProtectionFinalizer))
		g.Expect(vgr.Status.PersistentVolumeClaimsRefList).To(Equal([]corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}}))
		g.Expect(vgr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		vr := getVR(g, ctx, east, tw.ns, vgr.Spec.VolumeReplicationName)
		g.Expect(vr.Spec.DataSource.Kind).To(Equal("VolumeGroupReplication"))
		g.Expect(vr.Spec.DataSource.Name).To(Equal("db"))
		g.Expect(vr.OwnerReferences).To(ContainElement(HaveField("UID", vgr.UID)))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
		g.Expect(vgr.Annotations).To(HaveKeyWithValue(csiaddons.VolumeReplicationNameAnnotation, vr.Name))
		g.Expect(vgr.Annotations).To(HaveKeyWithValue(csiaddons.VolumeGroupReplicationContentNameAnnotation, content.Name))
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(content), content)).To(Succeed())
		g.Expect(content.Finalizers).To(ConsistOf(csiaddons.VGRProtectionFinalizer, csiaddons.VolumeReplicationFinalizer))
		g.Expect(content.Status.PersistentVolumeMappingList).To(HaveLen(2))
		for _, name := range []string{"a", "b"} {
			expectMember(g, getPVC(g, ctx, east, tw.ns, name), true)
		}
		g.Expect(groupState(g, lab.West, handle).LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "the group is formed, protected and mirrored")

	joinAndLeave(g, ctx, east, tw, content)
	deleteGroup(g, ctx, east, tw, vgr, content, handle)
}

// joinAndLeave: a PVC created with the group's label joins; its label removed, it leaves at the
// group's next reconcile (a label change is no generation change: a primary's status refresh
// brings it).
func joinAndLeave(g Gomega, ctx context.Context, east client.Client, tw twins, content *replicationv1alpha1.VolumeGroupReplicationContent) {
	c := blockPVC(tw.ns, "c")
	c.Labels = map[string]string{groupLabel: "db"}
	g.Expect(east.Create(ctx, c)).To(Succeed())
	hc := boundHandle(g, ctx, east, tw.ns, "c")
	g.Eventually(func(g Gomega) {
		expectMember(g, getPVC(g, ctx, east, tw.ns, "c"), true)
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(content), content)).To(Succeed())
		g.Expect(content.Spec.Source.VolumeHandles).To(ContainElement(hc))
		g.Expect(imageState(g, lab.West, hc).LastSyncTime).NotTo(BeNil(), "the new member reaches west with the group")
	}).Should(Succeed(), "PVC c joins the group")
	c = getPVC(g, ctx, east, tw.ns, "c")
	patch := client.MergeFrom(c.DeepCopy())
	delete(c.Labels, groupLabel)
	g.Expect(east.Patch(ctx, c, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectMember(g, getPVC(g, ctx, east, tw.ns, "c"), false)
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(content), content)).To(Succeed())
		g.Expect(content.Spec.Source.VolumeHandles).NotTo(ContainElement(hc))
	}).Should(Succeed(), "PVC c leaves the group")
}

// deleteGroup: a member deleted stays Terminating while in the group; deleting the group
// deletes its VolumeReplication (disabling the mirroring of a primary group, so west's copies go)
// and its content before it releases the PVCs.
func deleteGroup(g Gomega, ctx context.Context, east client.Client, tw twins, vgr *replicationv1alpha1.VolumeGroupReplication, content *replicationv1alpha1.VolumeGroupReplicationContent, handle string) {

	// Without its pod, nothing but the group holds b (Kubernetes' own pvc-protection holds a PVC
	// a pod uses).
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = tw.ns, "app"
	g.Expect(east.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pod), pod)).NotTo(Succeed())
	}).Should(Succeed(), "the writer pod is gone")
	g.Expect(east.Delete(ctx, getPVC(g, ctx, east, tw.ns, "b"))).To(Succeed())
	g.Consistently(func(g Gomega) {
		b := getPVC(g, ctx, east, tw.ns, "b")
		g.Expect(b.DeletionTimestamp).NotTo(BeNil())
		expectMember(g, b, true)
	}).WithTimeout(3*time.Second).Should(Succeed(), "a member being deleted stays Terminating while it is in the group")

	g.Expect(east.Delete(ctx, vgr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred(), "the VolumeGroupReplication is gone")
		g.Expect(client.IgnoreNotFound(east.Get(ctx, client.ObjectKeyFromObject(content), content))).To(Succeed())
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(content), content)).NotTo(Succeed(), "the content is gone")
		var vrs replicationv1alpha1.VolumeReplicationList
		g.Expect(east.List(ctx, &vrs, client.InNamespace(tw.ns))).To(Succeed())
		g.Expect(vrs.Items).To(BeEmpty(), "the group's VolumeReplication is gone")
		expectMember(g, getPVC(g, ctx, east, tw.ns, "a"), false)
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: tw.ns, Name: "b"}, &corev1.PersistentVolumeClaim{})).NotTo(Succeed(), "the deleted member is released and goes")
		g.Expect(groupState(g, lab.West, handle).Deleted).To(BeTrue(), "the primary group's mirroring was disabled: rbd-mirror deleted west's copy")
		g.Expect(imageState(g, lab.West, tw.handles["a"]).Deleted).To(BeTrue())
	}).WithTimeout(time.Minute).Should(Succeed(), "the group is deleted as upstream deletes it (its controllers requeue every 15 s while a dependent remains)")
}
