package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// fakeFences fences the PVCs it lists, fails for those in errs, and records what it was asked.
type fakeFences struct {
	fenced map[string]Fence
	errs   map[string]error
	asked  []string
}

var _ Fences = (*fakeFences)(nil)

func (f *fakeFences) FencedBy(_ context.Context, namespace, pvc string) (*Fence, error) {
	key := namespace + "/" + pvc
	f.asked = append(f.asked, key)
	if err := f.errs[key]; err != nil {
		return nil, err
	}
	if fence, ok := f.fenced[key]; ok {
		return &fence, nil
	}
	return nil, nil
}

func pvcVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

func ephemeralVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}},
	}}
}

func testPod(name string, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img"}},
			Volumes:    append([]corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...),
		},
	}
}

func request(op admissionv1.Operation, kind string, obj runtime.Object) admission.Request {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid",
		Operation: op,
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: kind},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "app",
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

var (
	demoting  = Fence{VRG: types.NamespacedName{Namespace: "app", Name: "db"}, Reason: ReasonDemoting}
	secondary = Fence{VRG: types.NamespacedName{Namespace: "app", Name: "db"}, Reason: ReasonSecondary}
)

func TestPodFence(t *testing.T) {
	tests := []struct {
		name    string
		req     admission.Request
		fenced  map[string]Fence
		errs    map[string]error
		allowed bool
		code    int32
		message []string
		asked   []string
	}{{
		name:    "a pod without PVCs is admitted without asking",
		req:     request(admissionv1.Create, "Pod", testPod("web")),
		allowed: true,
	}, {
		name:    "a pod whose PVC no group fences is admitted",
		req:     request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))),
		allowed: true,
		asked:   []string{"app/data-db-0"},
	}, {
		name:    "a pod mounting a PVC of a demoting group is refused with the group, the PVC and what to do",
		req:     request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))),
		fenced:  map[string]Fence{"app/data-db-0": demoting},
		code:    http.StatusForbidden,
		message: []string{"VolumeReplicationGroup app/db is being demoted for a relocation", "PVC data-db-0", "until the application runs again on this cluster"},
		asked:   []string{"app/data-db-0"},
	}, {
		name:    "a pod mounting a PVC of a secondary group is refused and told why",
		req:     request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))),
		fenced:  map[string]Fence{"app/data-db-0": secondary},
		code:    http.StatusForbidden,
		message: []string{"VolumeReplicationGroup app/db is secondary", "PVC data-db-0", "failed over or relocated back"},
		asked:   []string{"app/data-db-0"},
	}, {
		name: "a pod is refused when any of its PVCs is fenced, and the fenced one is named",
		req: request(admissionv1.Create, "Pod", testPod("db-0",
			pvcVolume("logs", "logs-db-0"), pvcVolume("data", "data-db-0"))),
		fenced:  map[string]Fence{"app/data-db-0": demoting},
		code:    http.StatusForbidden,
		message: []string{"PVC data-db-0"},
		asked:   []string{"app/logs-db-0", "app/data-db-0"},
	}, {
		name: "a PVC mounted twice is asked about once",
		req: request(admissionv1.Create, "Pod", testPod("db-0",
			pvcVolume("a", "data-db-0"), pvcVolume("b", "data-db-0"))),
		allowed: true,
		asked:   []string{"app/data-db-0"},
	}, {
		name:    "an ephemeral volume is checked under the PVC name the controller gives it",
		req:     request(admissionv1.Create, "Pod", testPod("db-0", ephemeralVolume("scratch"))),
		fenced:  map[string]Fence{"app/db-0-scratch": demoting},
		code:    http.StatusForbidden,
		message: []string{"PVC db-0-scratch"},
		asked:   []string{"app/db-0-scratch"},
	}, {
		name:    "a pod is refused when the fence cannot be read, and the message says so",
		req:     request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))),
		errs:    map[string]error{"app/data-db-0": errors.New("connection refused")},
		code:    http.StatusInternalServerError,
		message: []string{"could not tell whether PVC app/data-db-0 is fenced", "refuses the pod", "connection refused"},
		asked:   []string{"app/data-db-0"},
	}, {
		name:    "a pod that cannot be decoded is refused",
		req:     admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: []byte("{")}}},
		code:    http.StatusBadRequest,
		message: []string{"could not read the pod"},
	}, {
		name:    "an update is admitted without asking, since a pod's volumes are immutable",
		req:     request(admissionv1.Update, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))),
		fenced:  map[string]Fence{"app/data-db-0": demoting},
		allowed: true,
	}, {
		name:    "another kind is admitted without asking",
		req:     request(admissionv1.Create, "ConfigMap", &corev1.ConfigMap{}),
		allowed: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fences := &fakeFences{fenced: tt.fenced, errs: tt.errs}
			resp := NewPodFence(fences, nil).Handle(context.Background(), tt.req)
			g.Expect(resp.Allowed).To(Equal(tt.allowed))
			g.Expect(fences.asked).To(Equal(tt.asked))
			if tt.allowed {
				return
			}
			g.Expect(resp.Result).NotTo(BeNil())
			g.Expect(resp.Result.Code).To(Equal(tt.code))
			for _, m := range tt.message {
				g.Expect(resp.Result.Message).To(ContainSubstring(m))
			}
		})
	}
}

func TestClaimNames(t *testing.T) {
	t.Run("an ephemeral volume of a pod without a name yet names no PVC", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(ClaimNames(testPod("", ephemeralVolume("scratch"), pvcVolume("data", "data")))).To(Equal([]string{"data"}))
	})
}
