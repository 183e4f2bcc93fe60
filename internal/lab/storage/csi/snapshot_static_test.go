package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// awaitSnapshot waits until a snapshot is ready, or has an error when wantError, and returns it.
func awaitSnapshot(g Gomega, cl client.Client, namespace, name string, wantError bool) *snapshotv1.VolumeSnapshot {
	vs := &snapshotv1.VolumeSnapshot{}
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, vs)).To(Succeed())
		g.Expect(vs.Status).NotTo(BeNil())
		if wantError {
			g.Expect(vs.Status.Error).NotTo(BeNil())
			return
		}
		g.Expect(ptr.Deref(vs.Status.ReadyToUse, false)).To(BeTrue())
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "snapshot %s/%s", namespace, name)
	return vs
}

// TestAPreProvisionedSnapshotRestoresTheSameDataInAnotherNamespace copies a snapshot into another
// namespace as a drill does: a content with the snapshot's handle (Retain) and a snapshot bound to
// it there; a PVC restored from it holds the same data, a snapshot the content does not name is
// refused, and deleting the copies leaves the original's data.
func TestAPreProvisionedSnapshotRestoresTheSameDataInAnotherNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east := storagetest.Client(g, testLab, lab.East)
	src, dst := storagetest.Namespace(t, g, east), storagetest.Namespace(t, g, east)
	g.Expect(east.Create(ctx, storagetest.FileClaim(src, "data"))).To(Succeed())
	files := storagetest.Tree{"a.txt": []byte("one\n"), "dir/b.bin": storagetest.RandomBytes(g, 4096)}
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, src, "data"), files)
	g.Expect(east.Create(ctx, &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "snap"},
		Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
	})).To(Succeed())
	original := awaitSnapshot(g, east, src, "snap", false)
	taken := &snapshotv1.VolumeSnapshotContent{}
	g.Expect(east.Get(ctx, client.ObjectKey{Name: *original.Status.BoundVolumeSnapshotContentName}, taken)).To(Succeed())

	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "static-" + dst},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: dst, Name: "copy"},
			DeletionPolicy:    snapshotv1.VolumeSnapshotContentRetain,
			Driver:            taken.Spec.Driver,
			Source:            snapshotv1.VolumeSnapshotContentSource{SnapshotHandle: taken.Status.SnapshotHandle},
		},
	}
	g.Expect(east.Create(ctx, content)).To(Succeed())
	bound := func(name string) *snapshotv1.VolumeSnapshot {
		return &snapshotv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: dst, Name: name},
			Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(content.Name)}},
		}
	}
	g.Expect(east.Create(ctx, bound("other"))).To(Succeed())
	other := awaitSnapshot(g, east, dst, "other", true)
	g.Expect(*other.Status.Error.Message).To(ContainSubstring("is bound to snapshot " + dst + "/copy"))

	g.Expect(east.Create(ctx, bound("copy"))).To(Succeed())
	copied := awaitSnapshot(g, east, dst, "copy", false)
	g.Expect(*copied.Status.BoundVolumeSnapshotContentName).To(Equal(content.Name))
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(content), content)).To(Succeed())
	g.Expect(content.Spec.VolumeSnapshotRef.UID).To(Equal(copied.UID), "the content is bound to the snapshot")

	g.Expect(east.Create(ctx, storagetest.RestoredClaim(dst, "data", "copy"))).To(Succeed())
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, dst, "data")), files, "the PVC restored in the other namespace")

	g.Expect(east.Delete(ctx, copied)).To(Succeed())
	g.Expect(east.Delete(ctx, content)).To(Succeed())
	_, err := os.Stat(storage.SnapshotPath(filepath.Join(testLab.Dir(), lab.East, "storage"), *taken.Status.SnapshotHandle))
	g.Expect(err).NotTo(HaveOccurred(), "the original snapshot's data stays")
	awaitSnapshot(g, east, src, "snap", false)
}

// TestASnapshotOfAMirroredSecondaryImageIsRefused: as ceph-csi's rbd snap create is on a
// non-primary image, the lab's snapshot of a secondary image fails with an error in its status.
func TestASnapshotOfAMirroredSecondaryImageIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east := storagetest.Client(g, testLab, lab.East)
	ns := storagetest.Namespace(t, g, east)
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "data"))).To(Succeed())
	dir := storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "data")
	images, err := storage.NewImages(filepath.Join(testLab.Dir(), lab.East, "storage"), "")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = images.UpdateState(filepath.Base(dir), func(st *storage.ImageState) { st.Role = storage.RoleSecondary })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(east.Create(ctx, &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
	})).To(Succeed())
	vs := awaitSnapshot(g, east, ns, "snap", true)
	g.Expect(*vs.Status.Error.Message).To(ContainSubstring("is not primary"))
	g.Expect(ptr.Deref(vs.Status.ReadyToUse, false)).To(BeFalse())
}
