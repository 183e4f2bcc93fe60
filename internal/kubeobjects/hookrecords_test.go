package kubeobjects_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/kubeobjects"
)

var gvkDeployment = appsv1.SchemeGroupVersion.WithKind("Deployment")

// scaled is a Deployment app/web with replicas (nil: unset) and annotations.
func scaled(t *testing.T, replicas *int32, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: meta1("app", "web"), Spec: appsv1.DeploymentSpec{Replicas: replicas}}
	d.Annotations = annotations
	return object(t, d, gvkDeployment)
}

// metaWith is the metadata of app/db with annotations.
func metaWith(annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "app", Name: "db", Annotations: annotations}
}

// A scale hook that finds a workload scaled by no hook records the replicas it finds; one that
// finds it as an earlier hook left it keeps the replicas from before that hook; one that finds
// it scaled by someone since records what it finds.
func TestAScaleHookRecordsTheReplicasFromBeforeAnyHook(t *testing.T) {
	g := NewWithT(t)
	first := kubeobjects.ScaleRecord(nil, "drain-clients", 3, 0)
	g.Expect(first).To(MatchJSON(`{"hook":"drain-clients","replicas":3,"set":0}`))
	held := map[string]string{kubeobjects.AnnotationScaledByHook: first}
	g.Expect(kubeobjects.ScaleRecord(held, "drain-again", 0, 0)).To(MatchJSON(`{"hook":"drain-again","replicas":3,"set":0}`),
		"a retry of the hook, or another hook, keeps the replicas from before the first")
	g.Expect(kubeobjects.ScaleRecord(held, "drain-clients", 5, 0)).To(MatchJSON(`{"hook":"drain-clients","replicas":5,"set":0}`),
		"someone scaled the workload to 5 since the last hook")
	g.Expect(kubeobjects.ScaleRecord(map[string]string{kubeobjects.AnnotationScaledByHook: "{"}, "h", 2, 1)).To(
		MatchJSON(`{"hook":"h","replicas":2,"set":1}`), "a record that does not parse is replaced")
}

// A capture stores a workload a scale hook holds scaled with the replicas it had before the
// hook, and never the hook's record; a workload scaled by someone since the hook keeps its own.
func TestCleanPutsBackTheReplicasAScaleHookChanged(t *testing.T) {
	record := func(replicas, set int32) map[string]string {
		return map[string]string{kubeobjects.AnnotationScaledByHook: kubeobjects.ScaleRecord(nil, "drain-clients", replicas, set),
			"team": "shop"}
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want int64
	}{
		{"scaled to 0 by a hook: the replicas from before", scaled(t, ptr.To[int32](0), record(3, 0)), 3},
		{"scaled up by a hook: the replicas from before", scaled(t, ptr.To[int32](4), record(1, 4)), 1},
		{"scaled by someone since the hook: its own", scaled(t, ptr.To[int32](2), record(3, 0)), 2},
		{"unset replicas are 1, which the hook set", scaled(t, nil, record(0, 1)), 0},
		{"no record: its own", scaled(t, ptr.To[int32](0), map[string]string{"team": "shop"}), 0},
		{"a StatefulSet as a Deployment", object(t, &appsv1.StatefulSet{ObjectMeta: metaWith(record(2, 0)),
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)}}, gvkSTS), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, recorded := tc.obj.GetAnnotations()[kubeobjects.AnnotationScaledByHook]
			out := kubeobjects.Clean(tc.obj)
			replicas, _, _ := unstructured.NestedInt64(out.Object, "spec", "replicas")
			g.Expect(replicas).To(Equal(tc.want))
			g.Expect(out.GetAnnotations()).NotTo(HaveKey(kubeobjects.AnnotationScaledByHook))
			g.Expect(out.GetAnnotations()).To(HaveKeyWithValue("team", "shop"), "the other annotations stay")
			_, still := tc.obj.GetAnnotations()[kubeobjects.AnnotationScaledByHook]
			g.Expect(still).To(Equal(recorded), "the object read is not changed")
		})
	}
}
