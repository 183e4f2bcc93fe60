package kubeobjects_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-io/drover/internal/kubeobjects"
)

// checkMapper serves the kinds of the checks' tests, with their real scopes.
func checkMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for gvk, scope := range map[schema.GroupVersionKind]meta.RESTScope{
		{Version: "v1", Kind: "Namespace"}:                                                             meta.RESTScopeRoot,
		{Version: "v1", Kind: "ConfigMap"}:                                                             meta.RESTScopeNamespace,
		{Version: "v1", Kind: "Secret"}:                                                                meta.RESTScopeNamespace,
		{Group: "apps", Version: "v1", Kind: "DaemonSet"}:                                              meta.RESTScopeNamespace,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                              meta.RESTScopeNamespace,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:                       meta.RESTScopeNamespace,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:                       meta.RESTScopeRoot,
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}: meta.RESTScopeRoot,
	} {
		m.Add(gvk, scope)
	}
	return m
}

func rawObject(apiVersion, kind, ns, name string, extra map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name}}}
	if ns != "" {
		o.SetNamespace(ns)
	}
	for k, v := range extra {
		o.Object[k] = v
	}
	return o
}

func TestCheckRefusesACaptureThatWouldCreateAnythingOutsideTheGroup(t *testing.T) {
	appNS := rawObject("v1", "Namespace", "", "app", nil)
	tests := []struct {
		name    string
		objects []*unstructured.Unstructured
		wantErr string
	}{
		{"a Role in kube-system, though the capture lists kube-system", []*unstructured.Unstructured{appNS,
			rawObject("rbac.authorization.k8s.io/v1", "Role", "kube-system", "own", nil)},
			"object 1 (Role.rbac.authorization.k8s.io kube-system/own) is outside the group's protected namespaces [app]: refusing to restore any of the capture"},
		{"another namespace itself", []*unstructured.Unstructured{rawObject("v1", "Namespace", "", "kube-system", nil)},
			"(Namespace kube-system) is not one of the group's protected namespaces [app]"},
		{"a cluster-scoped kind given a namespace", []*unstructured.Unstructured{appNS,
			rawObject("rbac.authorization.k8s.io/v1", "ClusterRole", "app", "everything", nil)},
			"is of kind ClusterRole.rbac.authorization.k8s.io, which is cluster-scoped: drover restores only namespaced objects"},
		{"a webhook configuration", []*unstructured.Unstructured{appNS,
			rawObject("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "app", "hook", nil)},
			"which is cluster-scoped"},
		{"a PV", []*unstructured.Unstructured{appNS, rawObject("v1", "PersistentVolume", "app", "root", nil)},
			"is of kind PersistentVolume, which drover never captures"},
		{"a RoleBinding to every authenticated user", []*unstructured.Unstructured{appNS,
			rawObject("rbac.authorization.k8s.io/v1", "RoleBinding", "app", "all", map[string]any{
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
				"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}},
			})},
			"binds group system:authenticated, which is every user of the cluster"},
		{"a RoleBinding to anonymous", []*unstructured.Unstructured{appNS,
			rawObject("rbac.authorization.k8s.io/v1", "RoleBinding", "app", "anon", map[string]any{
				"subjects": []any{map[string]any{"kind": "User", "name": "system:anonymous"}},
			})},
			"binds user system:anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &kubeobjects.Capture{Version: kubeobjects.FormatVersion, Namespaces: []string{"app", "kube-system"}, Objects: tt.objects}
			got, err := kubeobjects.Check(c, []string{"app"}, checkMapper())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			var refusal *kubeobjects.Refusal
			g.Expect(errors.As(err, &refusal)).To(BeTrue())
			g.Expect(got.Objects).To(BeEmpty())
		})
	}
}

func TestCheckDropsTokensAndKeepsOnlyTheApplicationsNamespaceLabels(t *testing.T) {
	g := NewWithT(t)
	ns := rawObject("v1", "Namespace", "", "app", nil)
	ns.SetLabels(map[string]string{
		"team": "db", "app.kubernetes.io/part-of": "shop",
		"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "privileged",
		"drover.io/fenced": "true",
	})
	ns.SetAnnotations(map[string]string{"note": "kept", "scheduler.alpha.kubernetes.io/node-selector": "node=control-plane"})
	token := rawObject("v1", "Secret", "app", "stolen-token", map[string]any{"type": "kubernetes.io/service-account-token"})
	conf := rawObject("v1", "ConfigMap", "app", "conf", nil)
	c := &kubeobjects.Capture{Version: kubeobjects.FormatVersion, Namespaces: []string{"app"},
		Objects: []*unstructured.Unstructured{conf, token, ns}}
	got, err := kubeobjects.Check(c, []string{"app"}, checkMapper())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys(got.Objects)).To(Equal([]string{"Namespace app", "ConfigMap app/conf"}))
	g.Expect(got.Dropped).To(ConsistOf(ContainSubstring("Secret app/stolen-token (a service account token")))
	g.Expect(got.Objects[0].GetLabels()).To(Equal(map[string]string{"team": "db", "app.kubernetes.io/part-of": "shop",
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"}),
		"the captured level privileged is restored as baseline, the floor; the warn label is the target cluster's")
	g.Expect(got.Objects[0].GetAnnotations()).To(Equal(map[string]string{"note": "kept"}))
	g.Expect(ns.GetLabels()).To(HaveKey("pod-security.kubernetes.io/enforce"), "the capture itself is left as it is")
}

func TestCheckRestoresTheCapturedPodSecurityLevelNeverBelowBaseline(t *testing.T) {
	for captured, want := range map[string]string{"": "baseline", "privileged": "baseline", "nonsense": "baseline",
		"baseline": "baseline", "restricted": "restricted"} {
		t.Run("captured "+captured, func(t *testing.T) {
			g := NewWithT(t)
			ns := rawObject("v1", "Namespace", "", "app", nil)
			if captured != "" {
				ns.SetLabels(map[string]string{"pod-security.kubernetes.io/enforce": captured, "pod-security.kubernetes.io/enforce-version": "v1.20"})
			}
			got, err := kubeobjects.Check(&kubeobjects.Capture{Version: kubeobjects.FormatVersion, Objects: []*unstructured.Unstructured{ns}}, []string{"app"}, checkMapper())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Objects[0].GetLabels()).To(Equal(map[string]string{"pod-security.kubernetes.io/enforce": want, "pod-security.kubernetes.io/enforce-version": "latest"}))
			g.Expect(string(kubeobjects.LevelOf(got.Objects[0]))).To(Equal(want))
		})
	}
	g := NewWithT(t)
	got, err := kubeobjects.Check(&kubeobjects.Capture{Version: kubeobjects.FormatVersion}, []string{"app", "db"}, checkMapper())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys(got.Objects)).To(Equal([]string{"Namespace app", "Namespace db"}), "a protected namespace the capture lacks is restored at the floor")
	g.Expect(got.Objects[1].GetLabels()).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"))
	two := &kubeobjects.Capture{Version: kubeobjects.FormatVersion, Objects: []*unstructured.Unstructured{
		rawObject("v1", "Namespace", "", "app", nil), rawObject("v1", "Namespace", "", "app", nil)}}
	_, err = kubeobjects.Check(two, []string{"app"}, checkMapper())
	g.Expect(err).To(MatchError(ContainSubstring("the second Namespace app")))
}

func TestNamespaceKeyRestored(t *testing.T) {
	for key, want := range map[string]bool{
		"team": true, "app.kubernetes.io/name": true,
		"pod-security.kubernetes.io/enforce": false, "kubernetes.io/metadata.name": false,
		"openshift.io/sa.scc.uid-range": false, "drover.io/fenced": false, "example.com/x": false,
	} {
		if got := kubeobjects.NamespaceKeyRestored(key); got != want {
			t.Errorf("NamespaceKeyRestored(%q) = %v, want %v", key, got, want)
		}
	}
}
