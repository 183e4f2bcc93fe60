package volsynclab_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// cutBulkFiles are written into east's volume so that a sync takes seconds and the source's
// stop cuts it; they sort after records/, so the cut sync writes the records first.
const cutBulkFiles = 200

// A VolSync failover whose source stopped in the middle of a transfer: west, secondary,
// receives east's PVC into a PVC it kept (as after an earlier role), and east is lost while a
// sync writes into it, leaving it part old, part new. West's promotion restores the PVC with
// exactly the records of the destination's latest image, never the mixed volume; the image is
// held do-not-delete during the restore and released after.
func TestVolSyncFailoverAfterACutTransferRestoresTheLatestImage(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volSyncClient(t, lab.East), volSyncClient(t, lab.West)
	ns := "volsync-cut"
	for _, cl := range []client.Client{east, west} {
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	sts := fileStatefulSet(ns, "db", 1)
	g.Expect(east.Create(ctx, sts)).To(Succeed())
	eastGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStatePrimary)
	eastGroup.Spec.SchedulingInterval = "10s" // below a minute: continuous syncs
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	kept := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0", Labels: map[string]string{"app": "db"}},
		Spec:       sts.Spec.VolumeClaimTemplates[0].Spec,
	}
	g.Expect(west.Create(ctx, kept)).To(Succeed(), "west keeps a PVC of the StatefulSet, as after an earlier role")
	westGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStateSecondary)
	westGroup.Spec.Action = v1alpha1.ActionFailover // demoted by a failover, its PVC kept
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	snapshots := watchSnapshotLabels(ctx, t, g, ns)

	hubCopy(ctx, g, east, eastGroup, west, westGroup, 1)
	writer := runningWriters(ctx, g, east, ns, 1)["data-db-0"]
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(HaveValue(Equal("data-db-0")), "west receives into its kept PVC")
		g.Expect(rd.Status.LatestImage).NotTo(BeNil())
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rs)).To(Succeed())
		if rs.Annotations[storage.RsyncPaceAnnotation] == "" {
			patch := client.MergeFrom(rs.DeepCopy())
			metav1.SetMetaDataAnnotation(&rs.ObjectMeta, storage.RsyncPaceAnnotation, "50ms")
			g.Expect(east.Patch(ctx, rs, patch)).To(Succeed())
		}
	}).Should(Succeed(), "east syncs into west's kept PVC")

	// A sync of the bulk takes 10 s; east is stopped once the first files reach west.
	source := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.East, "storage"), pvcImage(ctx, g, east, ns, "data-db-0"))
	g.Expect(os.MkdirAll(filepath.Join(source, "zz-bulk"), 0o750)).To(Succeed())
	for i := range cutBulkFiles {
		g.Expect(os.WriteFile(filepath.Join(source, "zz-bulk", fmt.Sprintf("f%03d", i)), []byte("bulk\n"), 0o600)).To(Succeed())
	}
	replica := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), pvcImage(ctx, g, west, ns, "data-db-0"))
	g.Eventually(func(g Gomega) {
		g.Expect(bulkFiles(replica)).To(BeNumerically(">", 0))
	}).Should(Succeed(), "a sync of the bulk begins writing into west's kept PVC")
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	t.Cleanup(func() {
		_ = vrglab.Lab().Start(context.Background(), lab.East)
		_ = vrglab.StartAgent(lab.East)
	})
	arrived := bulkFiles(replica)
	g.Expect(arrived).To(BeNumerically("<", cutBulkFiles), "the sync was cut before its end (the pace is too fast for this machine)")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
	image := rd.Status.LatestImage.Name
	imageRecords, imageBulk := snapshotRecords(ctx, g, west, ns, image)
	g.Expect(imageBulk).To(BeZero(), "the latest image is a sync from before the bulk")
	mixed, err := records.Verify(replica)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("cut: %d of %d bulk files reached west's kept PVC; its records: %s; the latest image %s: %s",
		arrived, cutBulkFiles, lastSeq(mixed, writer), image, lastSeq(imageRecords, writer))

	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
	}).Should(Succeed(), "west's group restores the PVC")
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
	restoredDir := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), pvcImage(ctx, g, west, ns, "data-db-0"))
	restored, err := records.Verify(restoredDir)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("restored: PVC uid %s, volume %s, data source %+v, annotations %v: %s, %d bulk files, entries %v",
		pvc.UID, pvc.Spec.VolumeName, pvc.Spec.DataSourceRef, pvc.Annotations, lastSeq(restored, writer), bulkFiles(restoredDir), dirEntries(restoredDir))
	g.Expect(pvc.Spec.DataSourceRef).NotTo(BeNil(), "the PVC is drover's restore")
	g.Expect(pvc.Spec.DataSourceRef.Name).To(Equal(image), "restored from the latest image")
	g.Expect(bulkFiles(restoredDir)).To(BeZero(), "the restored PVC holds none of the cut sync's files")
	diff := records.Compare(imageRecords, restored)
	g.Expect(diff.Identical).To(BeTrue(), "the restored PVC holds exactly the latest image's records: %+v", diff.Writers)

	g.Expect(snapshots.labelled(image)).To(BeTrue(), "the image was labelled %s during the restore", "volsync.backube/do-not-delete")
	g.Eventually(func(g Gomega) {
		vs := &snapshotv1.VolumeSnapshot{}
		err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: image}, vs)
		if !apierrors.IsNotFound(err) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(vs.Labels).NotTo(HaveKey("volsync.backube/do-not-delete"), "released once the PVC is Bound")
		}
	}).Should(Succeed(), "the image is released")

	g.Expect(west.Delete(ctx, westGroup.DeepCopy())).To(Succeed())
	g.Expect(west.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Or(Succeed(), WithTransform(apierrors.IsNotFound, BeTrue())))
}

// bulkFiles counts the bulk files in a volume.
func bulkFiles(volume string) int {
	entries, _ := os.ReadDir(filepath.Join(volume, "zz-bulk"))
	return len(entries)
}

// dirEntries names what a volume's top directory holds, for a failure's log.
func dirEntries(volume string) []string {
	entries, err := os.ReadDir(volume)
	if err != nil {
		return []string{err.Error()}
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// lastSeq says a writer's last record in a report.
func lastSeq(r records.Report, writer string) string {
	w, ok := r.Writer(writer)
	if !ok {
		return "no records"
	}
	return fmt.Sprintf("last record %d", w.LastSeq)
}

// snapshotRecords verifies the records of a lab VolumeSnapshot's data and counts its bulk files.
func snapshotRecords(ctx context.Context, g Gomega, cl client.Client, ns, name string) (records.Report, int) {
	vs := &snapshotv1.VolumeSnapshot{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vs)).To(Succeed())
	g.Expect(vs.Status).NotTo(BeNil())
	g.Expect(vs.Status.BoundVolumeSnapshotContentName).NotTo(BeNil())
	content := &snapshotv1.VolumeSnapshotContent{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, content)).To(Succeed())
	g.Expect(content.Status).NotTo(BeNil())
	g.Expect(content.Status.SnapshotHandle).NotTo(BeNil())
	dir := storage.SnapshotPath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), *content.Status.SnapshotHandle)
	report, err := records.Verify(dir)
	g.Expect(err).NotTo(HaveOccurred())
	return report, bulkFiles(dir)
}

// snapshotWatch records, from a watch, the snapshots of a namespace that ever carried VolSync's
// do-not-delete label.
type snapshotWatch struct {
	mu   sync.Mutex
	held map[string]bool
}

func (w *snapshotWatch) labelled(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held[name]
}

func watchSnapshotLabels(ctx context.Context, t *testing.T, g Gomega, ns string) *snapshotWatch {
	c, err := vrglab.Lab().Cluster(lab.West)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	scheme := volSyncClient(t, lab.West).Scheme()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	events, err := wc.Watch(ctx, &snapshotv1.VolumeSnapshotList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	w := &snapshotWatch{held: map[string]bool{}}
	go func() {
		for e := range events.ResultChan() {
			vs, ok := e.Object.(*snapshotv1.VolumeSnapshot)
			if !ok || e.Type == watch.Error {
				continue
			}
			if _, held := vs.Labels["volsync.backube/do-not-delete"]; held {
				w.mu.Lock()
				w.held[vs.Name] = true
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(events.Stop)
	return w
}
