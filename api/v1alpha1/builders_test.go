package v1alpha1_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// testNamespace holds the namespaced test objects; every object gets a generated name, so the
// tests never collide.
const testNamespace = "default"

// s3Profile returns a valid S3 profile of the given name.
func s3Profile(name string) v1alpha1.S3Profile {
	return v1alpha1.S3Profile{
		Name:      name,
		Endpoint:  "http://127.0.0.1:9000",
		Bucket:    "drover",
		SecretRef: v1alpha1.SecretRef{Name: name + "-credentials", Namespace: "drover-system"},
	}
}

// drCluster returns a valid DRCluster, changed by mutate.
func drCluster(mutate ...func(*v1alpha1.DRClusterSpec)) *v1alpha1.DRCluster {
	c := &v1alpha1.DRCluster{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-"},
		Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Name: "east-kubeconfig", Namespace: "drover-system"},
			S3ProfileName:       "east-store",
			Region:              "eu-west",
		},
	}
	for _, m := range mutate {
		m(&c.Spec)
	}
	return c
}

// drPolicy returns a valid DRPolicy pairing east and west every 5m, changed by mutate.
func drPolicy(mutate ...func(*v1alpha1.DRPolicySpec)) *v1alpha1.DRPolicy {
	p := &v1alpha1.DRPolicy{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-"},
		Spec: v1alpha1.DRPolicySpec{
			DRClusters:         []string{"east", "west"},
			SchedulingInterval: "5m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{
				{Provisioner: "lab.csi.drover.io", Backend: v1alpha1.BackendVolRep},
			},
			S3Profiles: []v1alpha1.S3Profile{s3Profile("east-store"), s3Profile("west-store")},
		},
	}
	for _, m := range mutate {
		m(&p.Spec)
	}
	return p
}

// drpc returns a valid DRPlacementControl protecting the namespace "app" with the policy
// "east-west", changed by mutate.
func drpc(mutate ...func(*v1alpha1.DRPlacementControlSpec)) *v1alpha1.DRPlacementControl {
	d := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "app-", Namespace: testNamespace},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef:         v1alpha1.PolicyReference{Name: "east-west"},
			PreferredCluster:    "east",
			PVCSelector:         metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			ProtectedNamespaces: []string{"app"},
		},
	}
	for _, m := range mutate {
		m(&d.Spec)
	}
	return d
}

// withPlacementRef switches a DRPlacementControl spec to placementRef mode.
func withPlacementRef(s *v1alpha1.DRPlacementControlSpec) {
	s.ProtectedNamespaces = nil
	s.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "app-placement"}
}

// vrg returns a valid primary VolumeReplicationGroup, changed by mutate.
func vrg(mutate ...func(*v1alpha1.VolumeReplicationGroupSpec)) *v1alpha1.VolumeReplicationGroup {
	v := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "app-", Namespace: testNamespace},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState:   v1alpha1.ReplicationStatePrimary,
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			S3Profiles:         []v1alpha1.S3Profile{s3Profile("east-store"), s3Profile("west-store")},
			SchedulingInterval: "5m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{
				{StorageClassName: "lab-rbd", Backend: v1alpha1.BackendVolRep},
				{StorageClassName: "lab-fs", Backend: v1alpha1.BackendVolSync},
			},
		},
	}
	for _, m := range mutate {
		m(&v.Spec)
	}
	return v
}

// volSyncReceivePVC returns a valid description of a PVC a secondary receives with VolSync.
func volSyncReceivePVC() v1alpha1.VolSyncReceivePVC {
	return v1alpha1.VolSyncReceivePVC{
		PVCNamespace:     "app",
		PVCName:          "data-db-0",
		StorageClassName: "lab-fs",
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:         resource.MustParse("1Gi"),
	}
}

// createCase is an object that the API server must accept (wantErr empty) or reject as invalid
// with a message containing wantErr.
type createCase struct {
	name    string
	obj     client.Object
	wantErr string
}

func runCreateCases(t *testing.T, cases []createCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectOutcome(t, k8sClient.Create(t.Context(), tc.obj), tc.wantErr)
		})
	}
}

// updateCase is a valid object that is created, then changed by update; the API server must
// accept (wantErr empty) or reject the change as invalid with a message containing wantErr.
type updateCase[T client.Object] struct {
	name    string
	obj     T
	update  func(T)
	wantErr string
}

func runUpdateCases[T client.Object](t *testing.T, cases []updateCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := k8sClient.Create(t.Context(), tc.obj); err != nil {
				t.Fatalf("failed to create the object to update: %v", err)
			}
			tc.update(tc.obj)
			expectOutcome(t, k8sClient.Update(t.Context(), tc.obj), tc.wantErr)
		})
	}
}

// expectOutcome checks that err is nil when wantErr is empty, and otherwise an Invalid error
// whose message contains wantErr.
func expectOutcome(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("expected the API server to accept the object, got: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected the API server to reject the object with %q, but it accepted it", wantErr)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("expected an Invalid error containing %q, got: %v", wantErr, err)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("expected the rejection to say %q, got: %v", wantErr, err)
	}
	t.Logf("rejected as expected: %v", err)
}
