package webhook

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-io/drover/api/v1alpha1"
)

func protectedPVC(namespace, name, group string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if group != "" {
		pvc.Labels = map[string]string{LabelProtectedBy: group}
	}
	return pvc
}

func group(namespace, name string, state v1alpha1.ReplicationState, fence string, protected ...string) *v1alpha1.VolumeReplicationGroup {
	vrg := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1alpha1.VolumeReplicationGroupSpec{ReplicationState: state, ProtectedNamespaces: protected},
	}
	if fence != "" {
		vrg.Annotations = map[string]string{AnnotationFence: fence}
	}
	return vrg
}

// The fake client is enough here: ClusterFences only reads labels, annotations and a spec field.
func TestClusterFences(t *testing.T) {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	NewWithT(t).Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	primary, secondaryState := v1alpha1.ReplicationStatePrimary, v1alpha1.ReplicationStateSecondary

	tests := []struct {
		name    string
		objs    []client.Object
		pvc     string
		getErr  error
		want    *Fence
		wantErr string
	}{{
		name: "a PVC that does not exist is not fenced",
		pvc:  "missing",
	}, {
		name: "a PVC no group protects is not fenced",
		objs: []client.Object{protectedPVC("app", "data", "")},
		pvc:  "data",
	}, {
		name: "a PVC of a primary group is not fenced",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("app", "db", primary, "")},
		pvc:  "data",
	}, {
		name: "a PVC of a primary group being demoted for a relocation is fenced",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("app", "db", primary, FenceRelocate)},
		pvc:  "data",
		want: &Fence{VRG: types.NamespacedName{Namespace: "app", Name: "db"}, Reason: ReasonDemoting},
	}, {
		name: "a PVC of a secondary group is fenced",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("app", "db", secondaryState, "")},
		pvc:  "data",
		want: &Fence{VRG: types.NamespacedName{Namespace: "app", Name: "db"}, Reason: ReasonSecondary},
	}, {
		name: "an unknown fence annotation value fences nothing",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("app", "db", primary, "maybe")},
		pvc:  "data",
	}, {
		name: "a PVC of a group in another namespace that protects this one is fenced by that group",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("dr", "db", secondaryState, "", "app")},
		pvc:  "data",
		want: &Fence{VRG: types.NamespacedName{Namespace: "dr", Name: "db"}, Reason: ReasonSecondary},
	}, {
		name: "a group of the same name that does not protect the namespace fences nothing",
		objs: []client.Object{protectedPVC("app", "data", "db"), group("dr", "db", secondaryState, "", "other")},
		pvc:  "data",
	}, {
		name: "a label naming a group that no longer exists fences nothing",
		objs: []client.Object{protectedPVC("app", "data", "gone")},
		pvc:  "data",
	}, {
		name:    "an error reading the PVC is returned, not taken for unfenced",
		objs:    []client.Object{protectedPVC("app", "data", "db")},
		pvc:     "data",
		getErr:  errors.New("etcd is slow"),
		wantErr: "failed to get PVC app/data: etcd is slow",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...)
			if tt.getErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return tt.getErr
				}})
			}
			got, err := ClusterFences{Reader: b.Build()}.FencedBy(context.Background(), "app", tt.pvc)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
