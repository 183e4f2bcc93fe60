package vrg

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

func csiPV(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: "block",
			ClaimRef:         &corev1.ObjectReference{Namespace: "app", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "block.example.com", VolumeHandle: "image-1",
				NodeStageSecretRef: &corev1.SecretReference{Namespace: "kube-system", Name: "someone-elses"},
			}},
		},
	}
}

func TestPVSourceProblemAcceptsOnlyCSIAlone(t *testing.T) {
	hostPath := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	nfs := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}}}}
	both := csiPV("both")
	both.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/"}
	noHandle := csiPV("nohandle")
	noHandle.Spec.CSI.VolumeHandle = ""
	for name, tt := range map[string]struct {
		pv   *corev1.PersistentVolume
		want string
	}{
		"hostPath":           {hostPath, "is not a CSI volume"},
		"NFS":                {nfs, "is not a CSI volume"},
		"CSI and a hostPath": {both, "has another volume source besides CSI"},
		"CSI without handle": {noHandle, "is not a CSI volume with a driver and a volume handle"},
		"CSI alone":          {csiPV("ok"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := pvSourceProblem(tt.pv)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("pvSourceProblem = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretRefsComeFromTheStorageClassNeverFromTheStore(t *testing.T) {
	g := NewWithT(t)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}}
	pv := csiPV("pv-1")
	none := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "block"}}
	g.Expect(setSecretRefs(pv, pvc, none)).To(Succeed())
	g.Expect(pv.Spec.CSI.NodeStageSecretRef).To(BeNil(), "a class without secrets gives the PV none")

	pv = csiPV("pv-1")
	templated := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "block"}, Parameters: map[string]string{
		"csi.storage.k8s.io/node-stage-secret-name":             "stage-${pvc.name}",
		"csi.storage.k8s.io/node-stage-secret-namespace":        "${pvc.namespace}",
		"csi.storage.k8s.io/controller-expand-secret-name":      "expand",
		"csi.storage.k8s.io/controller-expand-secret-namespace": "storage",
	}}
	g.Expect(setSecretRefs(pv, pvc, templated)).To(Succeed())
	g.Expect(pv.Spec.CSI.NodeStageSecretRef).To(Equal(&corev1.SecretReference{Namespace: "app", Name: "stage-data"}))
	g.Expect(pv.Spec.CSI.ControllerExpandSecretRef).To(Equal(&corev1.SecretReference{Namespace: "storage", Name: "expand"}))
	g.Expect(pv.Spec.CSI.NodePublishSecretRef).To(BeNil())

	unknown := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "block"}, Parameters: map[string]string{
		"csi.storage.k8s.io/node-stage-secret-name":      "${pvc.annotations['team/secret']}",
		"csi.storage.k8s.io/node-stage-secret-namespace": "app",
	}}
	g.Expect(setSecretRefs(csiPV("pv-1"), pvc, unknown)).To(MatchError(ContainSubstring("is not one drover fills")))
}

func TestAStoredPVCOutsideTheProtectedNamespacesIsRefused(t *testing.T) {
	g := NewWithT(t)
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app-dr", Name: "db"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{ProtectedNamespaces: []string{"app"}}}
	g.Expect(checkStoredPVC(vrg, "s3-west", "app-dr/db/claims/3-west/", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}})).To(BeNil())
	c := checkStoredPVC(vrg, "s3-west", "app-dr/db/claims/3-west/", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "data"}})
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.reason).To(Equal(v1alpha1.ReasonStoreObjectRefused))
	g.Expect(c.message).To(ContainSubstring(`S3 profile s3-west: object "app-dr/db/claims/3-west/pvcs/kube-system/data.json" is refused, and nothing is created from it: PVC kube-system/data is outside the group's protected namespaces [app]`))
}

func TestRestoredPVCHasNoDataSource(t *testing.T) {
	g := NewWithT(t)
	stored := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		DataSource:    &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other-tenants"},
		DataSourceRef: &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "other-tenants"},
	}}
	got := restoredPVC(stored)
	g.Expect(got.Spec.DataSource).To(BeNil())
	g.Expect(got.Spec.DataSourceRef).To(BeNil())
}

func TestAMarkerOfAnAbsurdEpochIsRefusedAndNoClaimOverflows(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, epoch := range []int64{math.MaxInt64, MaxEpoch, -1} {
		store := objectstore.NewFake("s3-west")
		putMarker(g, store, PrimaryMarker{Cluster: "east", Epoch: epoch})
		m, err := ReadMarker(ctx, store, "app/db/")
		g.Expect(m).To(BeNil())
		g.Expect(errors.Is(err, objectstore.ErrRefused)).To(BeTrue(), "epoch %d: %v", epoch, err)
		g.Expect(err).To(MatchError(ContainSubstring("primary.json")))
	}
	epoch, ok := nextEpoch([]storeMarker{{name: "a", marker: &PrimaryMarker{Epoch: MaxEpoch - 1}}})
	g.Expect(ok).To(BeFalse(), "no claim beyond MaxEpoch, got %d", epoch)
	epoch, ok = nextEpoch([]storeMarker{{name: "a", marker: &PrimaryMarker{Epoch: MaxEpoch - 2}}})
	g.Expect(ok).To(BeTrue())
	g.Expect(epoch).To(Equal(MaxEpoch - 1))
}
