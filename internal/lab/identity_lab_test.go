package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
)

// The agent's ServiceAccount may, by RBAC, create pods, webhooks and Roles; the admission
// policy drover-agent-identity keeps it to what the agent does, and drover-hub-on-managed-cluster
// keeps the hub's credential to what the hub does. An agent that starts without them runs with
// those paths open: it refuses to start (agent.Preflight, which `drover agent` runs first),
// naming what is missing, reading with its own ServiceAccount's token.
func TestTheAgentRefusesToStartWithoutTheIdentityPolicies(t *testing.T) {
	g := newG(t)
	ctx := t.Context()
	c := cluster(g, lab.East)
	admin, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(admin)
	tr, err := cs.CoreV1().ServiceAccounts(lab.DroverNamespace).CreateToken(ctx, lab.AgentDeployment, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	asAgent := &rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
	if err := agent.Preflight(ctx, asAgent); err != nil {
		t.Fatalf("on a cluster with both policies the agent refuses to start: %v", err)
	}
	east, err := testLab.Client(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { awaitAgentIdentityEnforced(t, asAgent) }) // cleanups run last first: after the restores below
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "drover-hub-on-managed-cluster"}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "drover-agent-identity"}},
	} {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		kept := obj.DeepCopyObject().(client.Object)
		g.Expect(east.Delete(ctx, obj)).To(Succeed())
		t.Cleanup(func() {
			kept.SetResourceVersion("")
			kept.SetUID("")
			if err := east.Create(context.Background(), kept); err != nil {
				t.Errorf("failed to restore %s: %v", kept.GetName(), err)
			}
		})
	}
	err = agent.Preflight(ctx, asAgent)
	t.Logf("the agent, with both deleted: %v", err)
	if err == nil {
		t.Fatal("the agent starts without its identity policies")
	}
	for _, want := range []string{"refuses to start", "ValidatingAdmissionPolicy drover-hub-on-managed-cluster", "ValidatingAdmissionPolicyBinding drover-agent-identity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}
}

// The agent's ServiceAccount may create Roles and RoleBindings (with escalate and bind: a
// restore recreates the application's RBAC). Whoever holds it must not grant another user
// rights in a namespace drover does not protect, rights that would outlive the token: it may
// write them only where a group lives, in a drill's sandbox, or where an administrator allowed
// it, and it cannot give itself that allowance.
func TestTheAgentsServiceAccountWritesRoleBindingsOnlyWhereItProtects(t *testing.T) {
	g := newG(t)
	ctx := t.Context()
	c := cluster(g, lab.East)
	admin, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(admin)
	tr, err := cs.CoreV1().ServiceAccounts(lab.DroverNamespace).CreateToken(ctx, lab.AgentDeployment, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	asAgent := kubernetes.NewForConfigOrDie(&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}})
	east, err := testLab.Client(lab.East, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())

	other, protected, sandbox := "rbac-unprotected", "rbac-protected", "rbac-protected-drill-r1"
	for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: other}}, {ObjectMeta: metav1.ObjectMeta{Name: protected}},
		{ObjectMeta: metav1.ObjectMeta{Name: sandbox, Labels: map[string]string{"drover.io/drill": "r1"}}}} {
		g.Expect(client.IgnoreAlreadyExists(east.Create(ctx, ns))).To(Succeed())
	}
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: protected, Name: "app"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary, SchedulingInterval: "1m",
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}},
			S3Profiles: []v1alpha1.S3Profile{{Name: "unused", Endpoint: "http://127.0.0.1:9", Bucket: "unused", Region: "lab",
				SecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: "unused"}}},
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}}}}
	g.Expect(east.Create(ctx, group)).To(Succeed())
	t.Cleanup(func() { _ = east.Delete(context.Background(), group) })

	// Labelled as a restore labels the RoleBindings it writes; an unlabelled one is refused
	// anywhere.
	binding := func(ns string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "attacker-admin", Labels: map[string]string{"drover.io/restored-rbac": "true"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "all"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}}}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// The API server resolves a policy's paramKind (the VolumeReplicationGroup CRD) through its
	// discovery, refreshed periodically: until then it refuses every request the policy
	// matches with "failed to configure policy" (failurePolicy Fail), whatever the request.
	g.Eventually(func() error {
		_, err = asAgent.RbacV1().RoleBindings(protected).Create(ctx, binding(protected), dryRun)
		return err
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the policy drover-agent-rbac resolves its paramKind")
	_, err = asAgent.RbacV1().RoleBindings(other).Create(ctx, binding(other), dryRun)
	t.Logf("the agent's identity binds mallory to a Role of %s: %v", other, err)
	g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy 'drover-agent-rbac'")))
	unlabelled := binding(other)
	unlabelled.Labels = nil
	_, err = asAgent.RbacV1().RoleBindings(other).Create(ctx, unlabelled, dryRun)
	t.Logf("the same, unlabelled: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("writes only the Roles and RoleBindings it restores")))
	_, err = asAgent.RbacV1().Roles(other).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "all",
		Labels: map[string]string{"drover.io/restored-rbac": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}, dryRun)
	g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy 'drover-agent-rbac'")), "a Role in %s", other)
	for _, ns := range []string{protected, sandbox} {
		_, err = asAgent.RbacV1().RoleBindings(ns).Create(ctx, binding(ns), dryRun)
		g.Expect(err).NotTo(HaveOccurred(), "a restore's RoleBinding in %s", ns)
	}
	// A restore (kubeobjects.Restore, as the agent runs it at a promotion) writes the
	// application's Role and RoleBinding where the group lives, and nothing where none does.
	agentClient, err := client.New(&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}},
		client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	captured := func(ns string) []*unstructured.Unstructured {
		role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"namespace": ns, "name": "app-reader"},
			"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}}}
		rb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"namespace": ns, "name": "app-reader"},
			"roleRef":  map[string]any{"apiGroup": rbacv1.GroupName, "kind": "Role", "name": "app-reader"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "app", "namespace": ns}}}}
		return []*unstructured.Unstructured{role, rb}
	}
	res, err := kubeobjects.Restore(ctx, agentClient, captured(protected), "drover-agent")
	g.Expect(err).NotTo(HaveOccurred(), "the restore of the application's RBAC in %s", protected)
	g.Expect(res.Created).To(Equal(2))
	_, err = kubeobjects.Restore(ctx, agentClient, captured(other), "drover-agent")
	t.Logf("a restore into %s, which holds no group: %v", other, err)
	g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy 'drover-agent-rbac'")))

	_, err = asAgent.CoreV1().Namespaces().Patch(ctx, other, types.MergePatchType, []byte(`{"metadata":{"labels":{"drover.io/restore-rbac":"true"}}}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	t.Logf("the agent's identity labels %s drover.io/restore-rbac: %v", other, err)
	g.Expect(err).To(MatchError(ContainSubstring("never sets or removes a namespace's drover.io/restore-rbac label")))
}

// awaitAgentIdentityEnforced waits until the API server enforces drover-agent-identity again
// (a policy or binding created anew is loaded some time later): the next test relies on it. The
// probe: the agent's identity labelling namespace default drover.io/restore-rbac, as a dry run.
func awaitAgentIdentityEnforced(t *testing.T, asAgent *rest.Config) {
	cs := kubernetes.NewForConfigOrDie(asAgent)
	patch := []byte(`{"metadata":{"labels":{"drover.io/restore-rbac":"true"}}}`)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.CoreV1().Namespaces().Patch(context.Background(), "default", types.MergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'drover-agent-identity'") {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the API server does not enforce drover-agent-identity a minute after it was restored: %v", err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
