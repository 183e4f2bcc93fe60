package drill_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/agent/drill"
)

func object(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetNamespace("app")
	o.SetName(name)
	return o
}

func TestMapObject(t *testing.T) {
	namespaces := map[string]string{"app": "app-drill-x1"}
	t.Run("a LoadBalancer Service becomes ClusterIP without node ports or external addresses", func(t *testing.T) {
		svc := object("v1", "Service", "web", map[string]any{"spec": map[string]any{
			"type": "LoadBalancer", "externalIPs": []any{"203.0.113.1"}, "loadBalancerIP": "203.0.113.2",
			"externalTrafficPolicy": "Local", "healthCheckNodePort": int64(30001),
			"ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}},
		}})
		got, ok := drill.MapObject(svc, namespaces)
		if !ok {
			t.Fatal("the Service is left out")
		}
		spec := got.Object["spec"].(map[string]any)
		if spec["type"] != "ClusterIP" || got.GetNamespace() != "app-drill-x1" {
			t.Fatalf("type %v in %s, want ClusterIP in app-drill-x1", spec["type"], got.GetNamespace())
		}
		for _, f := range []string{"externalIPs", "loadBalancerIP", "externalTrafficPolicy", "healthCheckNodePort"} {
			if _, has := spec[f]; has {
				t.Errorf("spec.%s kept", f)
			}
		}
		if _, has := spec["ports"].([]any)[0].(map[string]any)["nodePort"]; has {
			t.Error("nodePort kept")
		}
		if _, has := svc.Object["spec"].(map[string]any)["externalIPs"]; !has {
			t.Error("the captured object was changed")
		}
	})
	t.Run("a CronJob is suspended", func(t *testing.T) {
		got, ok := drill.MapObject(object("batch/v1", "CronJob", "nightly", map[string]any{"spec": map[string]any{"schedule": "@daily"}}), namespaces)
		if !ok || got.Object["spec"].(map[string]any)["suspend"] != true {
			t.Fatalf("not suspended: %v", got)
		}
	})
	t.Run("a RoleBinding's subjects of a protected namespace are mapped", func(t *testing.T) {
		rb := object("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", map[string]any{"subjects": []any{
			map[string]any{"kind": "ServiceAccount", "name": "db", "namespace": "app"},
			map[string]any{"kind": "ServiceAccount", "name": "mon", "namespace": "monitoring"},
		}})
		got, _ := drill.MapObject(rb, namespaces)
		subjects := got.Object["subjects"].([]any)
		if subjects[0].(map[string]any)["namespace"] != "app-drill-x1" || subjects[1].(map[string]any)["namespace"] != "monitoring" {
			t.Fatalf("subjects %v", subjects)
		}
	})
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
	}{
		{"an Ingress", object("networking.k8s.io/v1", "Ingress", "web", nil)},
		{"an OpenShift Route", object("route.openshift.io/v1", "Route", "web", nil)},
		{"a Gateway API HTTPRoute", object("gateway.networking.k8s.io/v1", "HTTPRoute", "web", nil)},
		{"the application's NetworkPolicy", object("networking.k8s.io/v1", "NetworkPolicy", "allow-all", nil)},
		{"a service-account token", object("v1", "Secret", "tok", map[string]any{"type": "kubernetes.io/service-account-token"})},
		{"an ExternalName Service", object("v1", "Service", "ext", map[string]any{"spec": map[string]any{"type": "ExternalName", "externalName": "db.example.com"}})},
		{"the namespace itself", func() *unstructured.Unstructured {
			o := object("v1", "Namespace", "app", nil)
			o.SetNamespace("")
			return o
		}()},
		{"an object of a namespace not protected", func() *unstructured.Unstructured {
			o := object("v1", "ConfigMap", "c", nil)
			o.SetNamespace("other")
			return o
		}()},
	} {
		t.Run(tc.name+" is left out", func(t *testing.T) {
			if got, ok := drill.MapObject(tc.obj, namespaces); ok {
				t.Fatalf("mapped to %v", got)
			}
		})
	}
	t.Run("a ConfigMap is kept, in the sandbox", func(t *testing.T) {
		got, ok := drill.MapObject(object("v1", "ConfigMap", "c", map[string]any{"data": map[string]any{"k": "v"}}), namespaces)
		if !ok || got.GetNamespace() != "app-drill-x1" {
			t.Fatalf("got %v, %v", got, ok)
		}
	})
}
