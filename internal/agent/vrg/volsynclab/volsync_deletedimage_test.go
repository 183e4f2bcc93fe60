package volsynclab_test

import (
	"context"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage"
)

// A promotion never restores from an image that is being deleted: VolSync deletes the previous
// image once a newer sync's is recorded, and a PVC restored from a snapshot being deleted never
// binds, so the application placed on it would never start. West's destination names as its
// latest image a snapshot that is being deleted (a finalizer keeps it Terminating; the lab's
// hold keeps a newer image from replacing it); after the promotion no PVC is restored from it,
// and the group says why.
func TestVolSyncPromotionNeverRestoresFromAnImageBeingDeleted(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-deletedimage"
	p := startVolSyncPair(t, g, ns, 1, nil)
	east, west := p.east, p.west
	hubCopy(ctx, g, east, p.eastGroup, west, p.westGroup, 1)
	const pvc = "data-db-0"
	g.Eventually(func(g Gomega) {
		g.Expect(reportedPoint(ctx, g, east, p.eastGroup, pvc)).NotTo(BeZero())
	}).Should(Succeed(), "east's group reports a recovery point: west has an image to restore")
	latest := func(g Gomega) string {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage).NotTo(BeNil())
		return rd.Status.LatestImage.Name
	}
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
		patch := client.MergeFrom(rd.DeepCopy())
		metav1.SetMetaDataAnnotation(&rd.ObjectMeta, storage.HoldImageAnnotation, "true")
		g.Expect(west.Patch(ctx, rd, patch)).To(Succeed())
	}).Should(Succeed())
	var image string
	g.Eventually(func(g Gomega) {
		image = latest(g)
		g.Consistently(func(g Gomega) {
			g.Expect(latest(g)).To(Equal(image))
		}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}).Should(Succeed(), "west's destination has an image, and no newer one replaces it")
	const keep = "drover.io/test-keep"
	vs := &snapshotv1.VolumeSnapshot{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: image}, vs)).To(Succeed())
	patch := client.MergeFrom(vs.DeepCopy())
	controllerutil.AddFinalizer(vs, keep)
	g.Expect(west.Patch(ctx, vs, patch)).To(Succeed())
	t.Cleanup(func() {
		latest := &snapshotv1.VolumeSnapshot{}
		if west.Get(ctx, client.ObjectKey{Namespace: ns, Name: image}, latest) == nil {
			patch := client.MergeFrom(latest.DeepCopy())
			controllerutil.RemoveFinalizer(latest, keep)
			_ = west.Patch(ctx, latest, patch)
		}
	})
	g.Expect(west.Delete(ctx, vs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
		g.Expect(rd.Status.LatestImage.Name).To(Equal(image))
	}).Should(Succeed(), "the destination still names the image being deleted")

	vrglab.ScaleTo(ctx, g, east, client.ObjectKey{Namespace: ns, Name: "db"}, 0)
	vrglab.SetRole(ctx, g, west, p.westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Consistently(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		if err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, got); err == nil {
			ref := got.Spec.DataSourceRef
			g.Expect(ref == nil || ref.Name != image).To(BeTrue(), "PVC %s was restored from VolumeSnapshot %s, which is being deleted", pvc, image)
		}
	}).WithTimeout(10*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "no PVC is restored from an image being deleted")
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(p.westGroup), got)).To(Succeed())
	c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
	t.Logf("west's group: ClusterDataReady %s (%s): %s", c.Status, c.Reason, c.Message)
	g.Expect(c.Status).NotTo(Equal(metav1.ConditionTrue), "the data is not restored")
}
