package kubeobjects_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/kubeobjects"
)

// FuzzDecodeCapture feeds Decode what a store may hold: a capture read back from S3 was written
// by another process, perhaps another version, perhaps cut short. Decode must never panic, and
// what it accepts must be safe to restore and stable: every object named and inside the
// capture's namespaces, in restore order, and the same again after another encode and decode.
func FuzzDecodeCapture(f *testing.F) {
	f.Add([]byte(`{"version":1,"capturedAt":"2026-01-02T03:04:05Z","namespaces":["app"],"objects":[` +
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}},` +
		`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"namespace":"app","name":"db"}},` +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"app","name":"conf"},"data":{"k":"v"}}]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"kube-system","name":"x"}}]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}]}`))
	f.Add([]byte(`{"version":1,"objects":[null]}`))
	f.Add([]byte(`{"version":2,"objects":[]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"app","name":"c"`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := kubeobjects.Decode(body)
		if err != nil {
			return
		}
		for i, o := range c.Objects {
			if o.GetKind() == "" || o.GetName() == "" {
				t.Fatalf("object %d accepted without a kind or name: %v", i, o.Object)
			}
			ns := o.GetNamespace()
			if o.GroupVersionKind().GroupKind() == kubeobjects.KindNamespace {
				ns = o.GetName()
			}
			if !slices.Contains(c.Namespaces, ns) {
				t.Fatalf("object %s accepted outside the capture's namespaces %v", kubeobjects.Key(o), c.Namespaces)
			}
		}
		ordered := slices.Clone(c.Objects)
		kubeobjects.Order(ordered)
		if !slices.Equal(keys(ordered), keys(c.Objects)) {
			t.Fatalf("decoded objects are not in restore order: %v", keys(c.Objects))
		}
		again, err := kubeobjects.Encode(c)
		if err != nil {
			t.Fatalf("an accepted capture does not encode: %v", err)
		}
		c2, err := kubeobjects.Decode(again)
		if err != nil {
			t.Fatalf("an accepted capture, encoded again, is refused: %v", err)
		}
		if !slices.Equal(keys(c2.Objects), keys(c.Objects)) {
			t.Fatalf("the capture changed through an encode and decode: %v, then %v", keys(c.Objects), keys(c2.Objects))
		}
	})
}

func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, kubeobjects.Key(o))
	}
	return out
}

// FuzzCheckCapture feeds Check what Decode accepts from a store, against the group's own
// namespace app: what Check lets through must be safe to create whatever the document says,
// every object in app, namespaced, no token and no namespace key of another controller.
func FuzzCheckCapture(f *testing.F) {
	f.Add([]byte(`{"version":1,"namespaces":["app","kube-system"],"objects":[` +
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app","labels":{"team":"db","pod-security.kubernetes.io/enforce":"privileged"}}},` +
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"namespace":"kube-system","name":"own"}},` +
		`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"namespace":"kube-system","name":"root"}}]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[` +
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"namespace":"app","name":"all"},` +
		`"subjects":[{"kind":"Group","name":"system:authenticated"}]}]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[` +
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"namespace":"app","name":"x"}},` +
		`{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"app","name":"t"},"type":"kubernetes.io/service-account-token"}]}`))
	f.Add([]byte(`{"version":1,"namespaces":["app"],"objects":[` +
		`{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"app","name":"t"},"type":"kubernetes.io/service-account-token"},` +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"app","name":"c"}}]}`))
	mapper := checkMapper()
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := kubeobjects.Decode(body)
		if err != nil {
			return
		}
		got, err := kubeobjects.Check(c, []string{"app"}, mapper)
		if err != nil {
			return
		}
		for _, o := range got.Objects {
			gk := o.GroupVersionKind().GroupKind()
			switch {
			case gk == kubeobjects.KindNamespace:
				if o.GetName() != "app" {
					t.Fatalf("namespace %s accepted", o.GetName())
				}
				for k, v := range o.GetLabels() {
					switch {
					case k == "pod-security.kubernetes.io/enforce":
						if v != "baseline" && v != "restricted" {
							t.Fatalf("namespace %s restored enforcing Pod Security %q", o.GetName(), v)
						}
					case k == "pod-security.kubernetes.io/enforce-version":
					case !kubeobjects.NamespaceKeyRestored(k):
						t.Fatalf("namespace label %s accepted", k)
					}
				}
			case o.GetNamespace() != "app":
				t.Fatalf("object %s accepted outside app", kubeobjects.Key(o))
			case kubeobjects.Never(gk):
				t.Fatalf("object %s of a kind never captured accepted", kubeobjects.Key(o))
			}
			if m, err := mapper.RESTMapping(gk, o.GroupVersionKind().Version); err == nil && m.Scope.Name() != meta.RESTScopeNameNamespace && gk != kubeobjects.KindNamespace {
				t.Fatalf("cluster-scoped object %s accepted", kubeobjects.Key(o))
			}
			if t2, _, _ := unstructured.NestedString(o.Object, "type"); gk == kubeobjects.KindSecret && t2 == "kubernetes.io/service-account-token" {
				t.Fatalf("token %s accepted", kubeobjects.Key(o))
			}
		}
	})
}
