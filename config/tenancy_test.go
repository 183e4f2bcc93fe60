package config_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// tenantClient is a client of the API server as user, a member of an application team with
// every right on DRPlacementControls in namespace ns and no other.
func tenantClient(ctx context.Context, g Gomega, user, ns string) client.Client {
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drpc-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"drplacementcontrols"}, Verbs: []string{rbacv1.VerbAll},
	}}}
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, role))).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, binding))).To(Succeed())
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	s := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

func tenancyDRPC(ns, name string, change func(*v1alpha1.DRPlacementControlSpec)) *v1alpha1.DRPlacementControl {
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DRPlacementControlSpec{
		DRPolicyRef: v1alpha1.PolicyReference{Name: "east-west"}, PreferredCluster: "east",
		PVCSelector:         metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		ProtectedNamespaces: []string{ns},
	}}
	if change != nil {
		change(&d.Spec)
	}
	return d
}

// TestATenantWithDRPCRightsInItsNamespaceProtectsOnlyThatNamespace applies the hub's release
// manifests and acts as a tenant allowed every verb on DRPlacementControls in team-a and nothing
// else: the API server itself (the shipped ValidatingAdmissionPolicy, the CRD's rules) refuses a
// DRPlacementControl that would make the agents capture, copy or delete the objects of
// kube-system, of drover-system or of another team, steer another team's Placement, or switch
// namespaces after its creation. A DRPlacementControl in drover-system, an administrator's, may
// protect other namespaces.
func TestATenantWithDRPCRightsInItsNamespaceProtectsOnlyThatNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	kubectlApply(t, g, build(g, "hub"))
	tenant := tenantClient(ctx, g, "alice", "team-a")
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}))).To(Succeed())

	refused := []struct {
		name   string
		change func(*v1alpha1.DRPlacementControlSpec)
		want   string
	}{
		{"kube-system", func(s *v1alpha1.DRPlacementControlSpec) { s.ProtectedNamespaces = []string{"kube-system"} },
			"would protect the system namespace kube-system"},
		{"drover-system", func(s *v1alpha1.DRPlacementControlSpec) { s.ProtectedNamespaces = []string{"team-a", "drover-system"} },
			"would protect the system namespace drover-system"},
		{"another team's namespace", func(s *v1alpha1.DRPlacementControlSpec) { s.ProtectedNamespaces = []string{"team-a", "team-b"} },
			"spec.protectedNamespaces may name only the DRPlacementControl's own namespace team-a"},
		{"another team's Placement", func(s *v1alpha1.DRPlacementControlSpec) {
			s.ProtectedNamespaces = nil
			s.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "guestbook", Namespace: "argocd"}
		}, "spec.placementRef may name only a Placement of the DRPlacementControl's own namespace team-a"},
	}
	for _, tc := range refused {
		err := tenant.Create(ctx, tenancyDRPC("team-a", "app", tc.change), client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: the tenant's DRPlacementControl was not refused: %v", tc.name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.want), tc.name)
		t.Logf("%s: %v", tc.name, err)
	}

	// The tenant's own namespace, in either mode, needs nothing more.
	own := tenancyDRPC("team-a", "app", nil)
	g.Expect(tenant.Create(ctx, own)).To(Succeed())
	t.Cleanup(func() { _ = cl.Delete(context.Background(), own) })
	g.Expect(tenant.Create(ctx, tenancyDRPC("team-a", "gitops", func(s *v1alpha1.DRPlacementControlSpec) {
		s.ProtectedNamespaces = nil
		s.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "gitops"}
	}), client.DryRunAll)).To(Succeed())

	// Once created, the namespaces cannot change: a takeover by editing is refused.
	patch := client.MergeFrom(own.DeepCopy())
	own.Spec.ProtectedNamespaces = []string{"team-b"}
	err := tenant.Patch(ctx, own, patch)
	g.Expect(err).To(HaveOccurred(), "the tenant moved its DRPlacementControl to team-b")
	g.Expect(err.Error()).To(ContainSubstring("protectedNamespaces is immutable"))
	t.Logf("edit: %v", err)

	// An administrator lets team-a's DRPlacementControls name the Placements of a GitOps tool's
	// namespace, argocd, by labelling team-a; other namespaces stay refused.
	ns := &corev1.Namespace{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: "team-a"}, ns)).To(Succeed())
	nsPatch := client.MergeFrom(ns.DeepCopy())
	ns.Labels["drover.io/placement-namespace"] = "argocd"
	g.Expect(cl.Patch(ctx, ns, nsPatch)).To(Succeed())
	createArgo := func(placementNS string) error {
		return tenant.Create(ctx, tenancyDRPC("team-a", "argo", func(s *v1alpha1.DRPlacementControlSpec) {
			s.ProtectedNamespaces = nil
			s.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "shop", Namespace: placementNS}
		}), client.DryRunAll)
	}
	// The policy reads the namespace's labels from the API server's informer, which sees the
	// label a moment after the patch.
	g.Eventually(func() error { return createArgo("argocd") }).WithTimeout(10*time.Second).
		Should(Succeed(), "a Placement of argocd")
	g.Expect(createArgo("team-b")).To(MatchError(ContainSubstring("spec.placementRef may name only")), "a Placement of team-b")

	// An administrator's DRPlacementControl in drover-system protects other namespaces; still
	// never a system one.
	admin := tenantClient(ctx, g, "platform", "drover-system")
	g.Expect(admin.Create(ctx, tenancyDRPC("drover-system", "shop", func(s *v1alpha1.DRPlacementControlSpec) {
		s.ProtectedNamespaces = []string{"team-a", "team-b"}
	}), client.DryRunAll)).To(Succeed())
	err = admin.Create(ctx, tenancyDRPC("drover-system", "dns", func(s *v1alpha1.DRPlacementControlSpec) {
		s.ProtectedNamespaces = []string{"kube-system"}
	}), client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("would protect the system namespace kube-system")))
}
