package volsync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
	"github.com/drover-io/drover/internal/lab/storage/volsync"
)

// inode is the inode number of path.
func inode(g Gomega, path string) uint64 {
	fi, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	return fi.Sys().(*syscall.Stat_t).Ino
}

// pacedSource is rsyncSource with the lab's rsync taking pace for every file.
func pacedSource(namespace, name, pvc, address, keySecret, manual, pace string) *volsyncv1alpha1.ReplicationSource {
	rs := rsyncSource(namespace, name, pvc, address, keySecret, manual)
	rs.Annotations = map[string]string{volsync.RsyncPaceAnnotation: pace}
	return rs
}

// generation is n files f000... each holding "<tag> <i>".
func generation(tag string, n int) storagetest.Tree {
	t := storagetest.Tree{}
	for i := range n {
		t[fmt.Sprintf("f%03d", i)] = fmt.Appendf(nil, "%s %d\n", tag, i)
	}
	return t
}

// rsync-tls writes into the destination PVC: the volume's directory and every unchanged file
// stay the same files, changed ones are replaced, and the delete pass removes what the source
// removed.
func TestVolSyncWritesIntoTheDestinationVolumeFileByFile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	first := storagetest.Tree{"keep.txt": []byte("unchanged\n"), "change.txt": []byte("one\n"), "gone/old.txt": []byte("removed later\n")}
	storagetest.WriteTree(g, source, first)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap1 := latestSnapshot(g, west, ns, "db", "")
	destination := storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")
	storagetest.SameTree(g, storagetest.ReadTree(g, destination), first, "the destination volume after the first sync")
	dirInode, keepInode := inode(g, destination), inode(g, filepath.Join(destination, "keep.txt"))
	changeInode := inode(g, filepath.Join(destination, "change.txt"))

	g.Expect(os.RemoveAll(filepath.Join(source, "gone"))).To(Succeed())
	storagetest.WriteTree(g, source, storagetest.Tree{"change.txt": []byte("two\n")})
	triggerManual(g, east, ns, "db", "second")
	awaitManualSync(g, east, ns, "db", "second")
	second := storagetest.Tree{"keep.txt": first["keep.txt"], "change.txt": []byte("two\n")}
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, latestSnapshot(g, west, ns, "db", snap1.Name))), second, "the second snapshot")
	storagetest.SameTree(g, storagetest.ReadTree(g, destination), second, "the destination volume after the second sync")
	g.Expect(filepath.Join(destination, "gone")).NotTo(BeADirectory(), "the delete pass removes what the source removed")
	g.Expect(inode(g, destination)).To(Equal(dirInode), "the sync writes into the volume, it does not replace it")
	g.Expect(inode(g, filepath.Join(destination, "keep.txt"))).To(Equal(keepInode), "an unchanged file is not written again")
	g.Expect(inode(g, filepath.Join(destination, "change.txt"))).NotTo(Equal(changeInode), "a changed file is written anew")
}

// A source stopped in the middle of a transfer leaves the destination's volume with part of
// the new files and the rest old; the destination takes no snapshot of that, its latest image
// stays the last complete sync, and the sync completes once the source is back.
func TestVolSyncTransferCutByTheSourcesStopLeavesAMixedVolumeAndNoNewImage(t *testing.T) {
	const files = 200
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	old := generation("old", files)
	storagetest.WriteTree(g, source, old)
	g.Expect(east.Create(ctx, pacedSource(ns, "db", "db", address, keySecret, "first", "50ms"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap1 := latestSnapshot(g, west, ns, "db", "")
	destination := storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")

	fresh := generation("new", files)
	storagetest.WriteTree(g, source, fresh)
	triggerManual(g, east, ns, "db", "second")
	g.Eventually(func(g Gomega) {
		g.Expect(newFiles(g, destination, fresh)).To(BeNumerically(">", 0))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the second sync begins writing")
	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = testLab.Start(context.Background(), lab.East)
		}
	})

	arrived := newFiles(g, destination, fresh)
	t.Logf("The source stopped after %d of %d new files reached the destination", arrived, files)
	g.Expect(arrived).To(BeNumerically("<", files), "the transfer was cut before its end (the pace is too fast for this machine)")
	transfers, err := filepath.Glob(filepath.Join(testLab.Dir(), lab.West, "storage", "volsync", "incoming", address, "*", "transfer.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(transfers).To(BeEmpty(), "a cut transfer is never marked complete")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, rd)).To(Succeed())
	g.Expect(rd.Status.LatestImage).NotTo(BeNil())
	g.Expect(rd.Status.LatestImage.Name).To(Equal(snap1.Name), "no image of the mixed volume")
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, snap1)), old, "the latest image")

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	stopped = false
	east = storagetest.Client(g, testLab, lab.East)
	awaitManualSync(g, east, ns, "db", "second")
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, latestSnapshot(g, west, ns, "db", snap1.Name))), fresh,
		"the image of the sync completed after the source's return")
	storagetest.SameTree(g, storagetest.ReadTree(g, destination), fresh, "the destination volume after the completed sync")
}

// newFiles counts the files of want that dir holds with want's content.
func newFiles(g Gomega, dir string, want storagetest.Tree) int {
	n := 0
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && string(got) == string(content) {
			n++
		}
	}
	return n
}

// As upstream's cleanup: after each sync the previous image is deleted, unless it is labelled
// do-not-delete (any value), which also ends the destination's ownership of it at once.
func TestVolSyncDeletesThePreviousImageUnlessLabelledDoNotDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("one\n")})
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap1 := latestSnapshot(g, west, ns, "db", "")
	g.Expect(metav1.GetControllerOf(snap1)).NotTo(BeNil(), "the destination owns its image")

	patch := client.MergeFrom(snap1.DeepCopy())
	metav1.SetMetaDataLabel(&snap1.ObjectMeta, "volsync.backube/do-not-delete", "")
	g.Expect(west.Patch(ctx, snap1, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(snap1), snap1)).To(Succeed())
		g.Expect(snap1.OwnerReferences).To(BeEmpty())
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination gives up the labelled snapshot")

	latest := snap1.Name
	for i, manual := range []string{"second", "third"} {
		storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": fmt.Appendf(nil, "%d\n", i+2)})
		triggerManual(g, east, ns, "db", manual)
		awaitManualSync(g, east, ns, "db", manual)
		// The destination takes the image after the source completed: wait for it.
		latest = latestSnapshot(g, west, ns, "db", latest).Name
	}
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, rd)).To(Succeed())
	g.Expect(rd.Status.LatestImage.Name).To(Equal(latest))
	list := &snapshotv1.VolumeSnapshotList{}
	g.Eventually(func(g Gomega) {
		g.Expect(west.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, vs := range list.Items {
			if vs.DeletionTimestamp == nil {
				names = append(names, vs.Name)
			}
		}
		g.Expect(names).To(ConsistOf(snap1.Name, rd.Status.LatestImage.Name), "the second image is deleted, the labelled one kept")
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed())
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(snap1), snap1)).To(Succeed())
	g.Expect(snap1.Labels).NotTo(HaveKey("volsync.backube/cleanup"))
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, snap1)), storagetest.Tree{"a.txt": []byte("one\n")}, "the kept image")

	g.Expect(west.Delete(ctx, rd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: rd.Status.LatestImage.Name}, &snapshotv1.VolumeSnapshot{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the destination's own image goes with it: %v", err)
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed())
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(snap1), snap1)).To(Succeed(), "the labelled image stays")
}

// A destination with spec.rsyncTLS.volumeMode Block makes its volume a Block PVC, as VolSync's
// dynamic destination PVC takes the mode.
func TestVolSyncDestinationOfVolumeModeBlockMakesABlockPVC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	west := storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, west)
	rd := rsyncDestination(ns, "db")
	rd.Spec.RsyncTLS.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	g.Expect(west.Create(ctx, rd)).To(Succeed())
	storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "volsync-db-dst"}, pvc)).To(Succeed())
	g.Expect(pvc.Spec.VolumeMode).To(HaveValue(Equal(corev1.PersistentVolumeBlock)))
	pv := &corev1.PersistentVolume{}
	g.Expect(west.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
	g.Expect(pv.Spec.VolumeMode).To(HaveValue(Equal(corev1.PersistentVolumeBlock)))
}
