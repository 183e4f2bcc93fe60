// Package storagetest holds the fixtures that the tests of the lab storage's packages share, on
// the lab internal/lab/labtest starts for each test package: a client that knows every API the
// storage honours, namespaces, file PVCs (restored from a snapshot or not), a bound PVC's volume
// directory and directory trees to write and compare.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

const (
	// Timeout bounds each wait of these tests: a sync of a few MB takes about a second.
	Timeout = 60 * time.Second
	// Polling is how often the tests look again.
	Polling = 100 * time.Millisecond
)

// Client returns an administrator client of a lab cluster that knows every API the lab
// storage honours: replication, VolSync, snapshots and ServiceExports.
func Client(g gomega.Gomega, l *labtest.Lab, cluster string) client.Client {
	cl, err := l.Client(cluster, replicationv1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, snapshotv1.AddToScheme,
		mcsv1alpha1.AddToScheme)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return cl
}

// Namespace creates a namespace of a unique name on both managed clusters and deletes it when
// the test ends.
func Namespace(tb testing.TB, g gomega.Gomega, clients ...client.Client) string {
	name := "volsync-" + utilrand.String(6)
	for _, cl := range clients {
		g.Expect(cl.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(gomega.Succeed())
	}
	tb.Cleanup(func() {
		for _, cl := range clients {
			_ = cl.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	return name
}

// FileClaim is a 1 GiB PVC of the lab's file class.
func FileClaim(namespace, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(lab.FileStorageClass),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
}

// RestoredClaim is a file PVC whose data comes from a VolumeSnapshot.
func RestoredClaim(namespace, name, snapshot string) *corev1.PersistentVolumeClaim {
	pvc := FileClaim(namespace, name)
	pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{
		APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: snapshot,
	}
	return pvc
}

// ClaimVolumeDir waits for a PVC to be bound and returns its volume's directory.
func ClaimVolumeDir(g gomega.Gomega, l *labtest.Lab, cl client.Client, cluster, namespace, name string) string {
	pv := &corev1.PersistentVolume{}
	g.Eventually(func(g gomega.Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pvc)).To(gomega.Succeed())
		g.Expect(pvc.Status.Phase).To(gomega.Equal(corev1.ClaimBound))
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(gomega.Succeed())
	}).WithTimeout(Timeout).WithPolling(Polling).Should(gomega.Succeed(), "PVC %s on %s is bound", name, cluster)
	return state.VolumePath(filepath.Join(l.Dir(), cluster, "storage"), pv.Spec.CSI.VolumeHandle)
}

// Tree is a directory's regular files by relative path.
type Tree map[string][]byte

// WriteTree writes the files under dir.
func WriteTree(g gomega.Gomega, dir string, files Tree) {
	for name, data := range files {
		path := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o750)).To(gomega.Succeed())
		g.Expect(os.WriteFile(path, data, 0o600)).To(gomega.Succeed())
	}
}

// ReadTree reads the regular files under dir.
func ReadTree(g gomega.Gomega, dir string) Tree {
	files := Tree{}
	g.Expect(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(path) //nolint:gosec // a test's own temporary tree
		return err
	})).To(gomega.Succeed())
	return files
}

// SameTree compares trees without printing megabytes on a mismatch.
func SameTree(g gomega.Gomega, got, want Tree, what string) {
	g.Expect(got).To(gomega.HaveLen(len(want)), "%s: files %v, want %v", what, keys(got), keys(want))
	for name, data := range want {
		g.Expect(got).To(gomega.HaveKey(name), what)
		g.Expect(bytes.Equal(got[name], data)).To(gomega.BeTrue(), "%s: %s differs", what, name)
	}
}

func keys(t Tree) []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	return names
}

// RandomBytes are n random bytes.
func RandomBytes(g gomega.Gomega, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return b
}
