package volsynclab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// A returning old primary whose workload deletes its PVCs (a StatefulSet with whenDeleted:
// Delete, removed by a GitOps tool once the group is demoted) must stay the destination of the
// primary's PVC of the same name. The order is forced: the group is secondary and receives into
// its kept PVC first, then the workload and its PVC go. The destination must survive the PVC's
// release (switching to a volume of its own), never be deleted on the way, and keep being
// reported, or the primary has nowhere to send and the application is unprotected (before 2026-12-02:
// releasing the PVC deleted the destination, the receive path recreated it, pass after pass).
func TestVolSyncSecondaryKeepsReceivingWhenTheWorkloadDeletesItsPVC(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east := volSyncClient(t, lab.East)
	ns := "volsync-release"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	profiles, _ := vrglab.S3Profiles(g)

	// East was primary: its group protects the StatefulSet's PVC.
	sts := fileStatefulSet(ns, "db", 1)
	sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	g.Expect(east.Create(ctx, sts)).To(Succeed())
	group := volSyncVRG(ns, profiles, v1alpha1.ReplicationStatePrimary)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	var receive v1alpha1.VolSyncReceivePVC
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(1))
		p := got.Status.ProtectedPVCs[0]
		g.Expect(p.Backend).To(Equal(v1alpha1.BackendVolSync))
		g.Expect(p.Capacity).NotTo(BeNil())
		g.Expect(p.MoverSecurityContext).NotTo(BeNil(), "the movers' user is taken from the StatefulSet's pods")
		receive = v1alpha1.VolSyncReceivePVC{PVCNamespace: p.Namespace, PVCName: p.Name, StorageClassName: p.StorageClassName,
			AccessModes: p.AccessModes, Capacity: *p.Capacity, MoverSecurityContext: p.MoverSecurityContext}
	}).Should(Succeed(), "east protects the PVC")

	// Failed over away from, east is demoted and asked to receive the new primary's PVC; its
	// workload is stopped (scaled to zero: the PVC stays) and it receives into the kept PVC.
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover
		got.Spec.VolSync = &v1alpha1.VolSyncSpec{ReceivePVCs: []v1alpha1.VolSyncReceivePVC{receive}}
		g.Expect(east.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	vrglab.ScaleTo(ctx, g, east, client.ObjectKeyFromObject(sts), 0)
	rdKey := client.ObjectKey{Namespace: ns, Name: receive.PVCName}
	var uid types.UID
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(east.Get(ctx, rdKey, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(HaveValue(Equal(receive.PVCName)), "east receives into its kept PVC")
		g.Expect(reportedDestination(ctx, g, east, group)).To(ContainElement(receive.PVCName))
		uid = rd.UID
	}).Should(Succeed(), "east is the destination, receiving into its kept PVC")

	// The GitOps tool removes the StatefulSet; its PVC goes with it.
	g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sts.Name}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, rdKey, &corev1.PersistentVolumeClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deleted PVC is released: %v", err)
		assertReceiving(ctx, g, east, group, rdKey, uid)
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(east.Get(ctx, rdKey, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(BeNil(), "with the kept PVC gone, the destination receives into a volume of its own")
	}).Should(Succeed(), "the PVC is released and east still receives")
	g.Consistently(func(g Gomega) {
		assertReceiving(ctx, g, east, group, rdKey, uid)
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "east keeps receiving")
}

// assertReceiving checks that the group's destination is the one first made (never deleted),
// publishes its address and is reported in the group's status.
func assertReceiving(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, rdKey client.ObjectKey, uid types.UID) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(ctx, rdKey, rd)).To(Succeed())
	g.Expect(rd.UID).To(Equal(uid), "the destination is never deleted and made again")
	g.Expect(rd.DeletionTimestamp).To(BeNil())
	g.Expect(rd.Status).NotTo(BeNil())
	g.Expect(rd.Status.RsyncTLS).NotTo(BeNil())
	g.Expect(rd.Status.RsyncTLS.Address).To(HaveValue(Not(BeEmpty())))
	g.Expect(reportedDestination(ctx, g, cl, group)).To(ContainElement(rdKey.Name))
}

// reportedDestination lists the PVCs of the group's status.volSyncDestinations.
func reportedDestination(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup) []string {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
	var names []string
	for _, d := range got.Status.VolSyncDestinations {
		names = append(names, d.PVCName)
	}
	return names
}
