package volsynclab_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// wffcStatefulSet is a writer StatefulSet whose claims use the lab's WaitForFirstConsumer file
// class (VolSync).
func wffcStatefulSet(namespace, name string, replicas int32) *appsv1.StatefulSet {
	sts := fileStatefulSet(namespace, name, replicas)
	sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To(lab.FileWFFCStorageClass)
	return sts
}

// A failover to a cluster whose StorageClass binds on the first consumer (the default classes of
// EBS, GCE PD and Azure Disk): the PVC west restores from its destination's latest image stays
// Pending until a pod uses it, and the application is placed only once the group says its data
// is restored (ClusterDataReady and DataReady). The group says so while the PVC is Pending, with
// the image held do-not-delete (and the destination kept) until a pod binds the PVC; the pod then
// finds exactly the image's records, and the image and the destination are released.
func TestVolSyncFailoverToAWaitForFirstConsumerClassIsReadyBeforeItsPVCIsBound(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volSyncClient(t, lab.East), volSyncClient(t, lab.West)
	ns := "volsync-wffc"
	for _, cl := range []client.Client{east, west} {
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	g.Expect(east.Create(ctx, wffcStatefulSet(ns, "db", 1))).To(Succeed())
	groups := map[string]*v1alpha1.VolumeReplicationGroup{}
	for cluster, state := range map[string]v1alpha1.ReplicationState{lab.East: v1alpha1.ReplicationStatePrimary, lab.West: v1alpha1.ReplicationStateSecondary} {
		group := volSyncVRG(ns, profiles, state)
		group.Spec.SchedulingInterval = "10s"
		group.Spec.StorageClassBackends = []v1alpha1.StorageClassBackend{{StorageClassName: lab.FileWFFCStorageClass, Backend: v1alpha1.BackendVolSync}}
		groups[cluster] = group
	}
	eastGroup, westGroup := groups[lab.East], groups[lab.West]
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	t.Cleanup(func() {
		_ = east.Delete(ctx, eastGroup.DeepCopy())
		_ = west.Delete(ctx, westGroup.DeepCopy())
		for _, cl := range []client.Client{east, west} {
			_ = cl.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})
		}
	})

	hubCopy(ctx, g, east, eastGroup, west, westGroup, 1)
	writer := runningWriters(ctx, g, east, ns, 1)["data-db-0"]
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage).NotTo(BeNil())
		// The first image may be of a sync that began before the writer's first record.
		inImage, _ := snapshotRecords(ctx, g, west, ns, rd.Status.LatestImage.Name)
		_, ok := inImage.Writer(writer)
		g.Expect(ok).To(BeTrue(), "west's latest image holds records of %s", writer)
	}).Should(Succeed(), "east's PVC of the WaitForFirstConsumer class syncs to west")
	vrglab.ScaleTo(ctx, g, east, client.ObjectKey{Namespace: ns, Name: "db"}, 0)

	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	var image string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
		g.Expect(pvc.Spec.DataSourceRef).NotTo(BeNil())
		image = pvc.Spec.DataSourceRef.Name
	}).Should(Succeed(), "west's group is ready for the application with its PVC restored from the latest image")

	// Nothing uses the PVC yet: it stays Pending, its image held and its destination kept.
	g.Consistently(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimPending), "the PVC waits for its first consumer")
		vs := &snapshotv1.VolumeSnapshot{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: image}, vs)).To(Succeed())
		g.Expect(vs.DeletionTimestamp).To(BeNil())
		g.Expect(vs.Labels).To(HaveKey("volsync.backube/do-not-delete"), "the image is held until the PVC is Bound")
		g.Expect(vs.Annotations).To(HaveKeyWithValue(vrg.AnnotationHeldBy, volsync.GroupKey(westGroup)))
		_, rds := countVolSync(ctx, g, west, ns)
		g.Expect(rds).To(ConsistOf("data-db-0"), "the destination stays while its image is held")
	}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	imageRecords, _ := snapshotRecords(ctx, g, west, ns, image)

	// The application is placed: its pod is the PVC's first consumer.
	g.Expect(west.Create(ctx, wffcStatefulSet(ns, "db", 1))).To(Succeed())
	g.Eventually(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		vs := &snapshotv1.VolumeSnapshot{}
		err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: image}, vs)
		if !apierrors.IsNotFound(err) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(vs.Labels).NotTo(HaveKey("volsync.backube/do-not-delete"), "released once the PVC is Bound")
		}
		_, rds := countVolSync(ctx, g, west, ns)
		g.Expect(rds).To(BeEmpty(), "the destination goes once the restore no longer needs it")
	}).Should(Succeed(), "the first pod binds the PVC and the image is released")
	restored, err := records.Verify(storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), pvcImage(ctx, g, west, ns, "data-db-0")))
	g.Expect(err).NotTo(HaveOccurred())
	kept, ok := restored.Writer(writer)
	g.Expect(ok).To(BeTrue(), "the restored PVC holds east's records")
	inImage, _ := imageRecords.Writer(writer)
	g.Expect(kept.Gaps).To(BeEmpty())
	g.Expect(kept.LastSeq).To(BeNumerically(">=", inImage.LastSeq), "the pod found the image's records")
	t.Logf("restored on first consumer: image %s held %d records of %s; the bound PVC has %d", image, inImage.LastSeq, writer, kept.LastSeq)
}
