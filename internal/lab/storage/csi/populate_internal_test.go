package csi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// A PVC restored from a snapshot is filled once: provision runs again when the PVC changes
// before its PV is in the cache, and by then the snapshot may be gone (deleted once the PVC is
// Bound). A second copy replaced the restored volume with what was left of the snapshot, an
// empty directory, when the snapshot vanished between the check and the copy.
func TestARestoredVolumeIsNotCopiedAgainWhenProvisionRetries(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dataDir := t.TempDir()
	const drv, snapHandle = "lab.example/file", "snapshot-1"
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(snapshotv1.AddToScheme(scheme)).To(Succeed())
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "image"},
		Status: &snapshotv1.VolumeSnapshotStatus{
			BoundVolumeSnapshotContentName: ptr.To("snapcontent-1"), ReadyToUse: ptr.To(true),
		},
	}
	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-1"},
		Spec:       snapshotv1.VolumeSnapshotContentSpec{Driver: drv},
		Status:     &snapshotv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(snapHandle)},
	}
	s := &store{Store: &driver.Store{
		Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(vs, content).Build(),
		Opts:   driver.Options{DataDir: dataDir, Drivers: []string{drv}},
	}}
	g.Expect(os.MkdirAll(state.VolumePath(dataDir, ""), 0o750)).To(Succeed())
	snapData := state.SnapshotPath(dataDir, snapHandle)
	g.Expect(os.MkdirAll(filepath.Join(snapData, "records"), 0o750)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(snapData, "records", "w.log"), []byte("1 a\n"), 0o600)).To(Succeed())
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{DataSourceRef: &corev1.TypedObjectReference{
			APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: "image",
		}},
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: drv}
	restored := filepath.Join(state.VolumePath(dataDir, "pvc-1"), "records", "w.log")

	res, err := s.populate(ctx, pvc, sc, "pvc-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsZero()).To(BeTrue())
	g.Expect(os.ReadFile(restored)).To(Equal([]byte("1 a\n")), "the first pass restores the snapshot's data")

	g.Expect(os.RemoveAll(snapData)).To(Succeed(), "the snapshot is deleted once its PVC is Bound")
	res, err = s.populate(ctx, pvc, sc, "pvc-1")
	g.Expect(err).NotTo(HaveOccurred(), "a retried provision of a filled volume is a no-op")
	g.Expect(res.IsZero()).To(BeTrue())
	g.Expect(os.ReadFile(restored)).To(Equal([]byte("1 a\n")), "the restored data is still there")
}
