package config_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// agentUser is the agent's ServiceAccount as the API server names it.
const agentUser = "system:serviceaccount:drover-system:drover-agent"

// TestTheAgentsIdentityIsBoundToWhatTheAgentDoes applies the agent's release manifests and acts
// as the agent's ServiceAccount (impersonated: its RBAC and the admission policy see that user):
// whatever its ClusterRole allows, the shipped ValidatingAdmissionPolicy drover-agent-identity
// refuses a pod that is not a dry run, another webhook configuration, deleting a Secret drover
// did not make or a namespace that is not a drill's sandbox (or labelling one as such), a Role
// the restore did not label or one outside the namespaces of its groups (drover-agent-rbac),
// and any write in a system namespace or in drover-system beyond its own objects, and lets
// through what the agent does.
func TestTheAgentsIdentityIsBoundToWhatTheAgentDoes(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	kubectlApply(t, g, build(g, "agent"))
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: agentUser}
	agent, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	const app = "agent-identity-app"
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}}))).To(Succeed())
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "db-password"}, StringData: map[string]string{"password": "s3cret"}}
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "db-data-0-volsync-key",
		Labels: map[string]string{"drover.io/vrg-name": "db", "drover.io/vrg-namespace": app}}}
	for _, s := range []*corev1.Secret{users, key} {
		g.Expect(cl.Create(ctx, s)).To(Succeed())
	}
	// The application's group: the agent restores Roles and RoleBindings where one lives.
	group := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "drover.io/v1alpha1", "kind": "VolumeReplicationGroup",
		"metadata": map[string]any{"namespace": app, "name": "db"},
		"spec": map[string]any{"replicationState": "secondary", "schedulingInterval": "1m", "pvcSelector": map[string]any{},
			"s3Profiles": []any{map[string]any{"name": "p", "endpoint": "http://127.0.0.1:9", "bucket": "bucket", "region": "r",
				"secretRef": map[string]any{"namespace": "drover-system", "name": "p"}}},
			"storageClassBackends": []any{map[string]any{"provisioner": "lab.drover.io", "backend": "VolRep"}}}}}
	g.Expect(cl.Create(ctx, group)).To(Succeed())
	restored := map[string]string{"drover.io/restored-rbac": "true"}

	refused := []struct {
		name string
		do   func() error
		want string
	}{
		{"a pod in kube-system that is not a dry run", func() error {
			return agent.Create(ctx, probePod("kube-system"))
		}, "drover's agent creates pods only as a dry run"},
		{"a pod in the application's namespace that is not a dry run", func() error {
			return agent.Create(ctx, probePod(app))
		}, "drover's agent creates pods only as a dry run"},
		{"another webhook configuration", func() error {
			return agent.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "intercept-everything"}})
		}, "drover's agent writes only the ValidatingWebhookConfiguration drover-fence"},
		{"deleting a Secret of the application", func() error {
			return agent.Delete(ctx, users.DeepCopy())
		}, "drover's agent deletes only the Secrets it made"},
		{"a Role in drover-system", func() error {
			return agent.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "escalate"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}})
		}, "drover's agent writes in drover-system only its Lease, its Events and its fence certificate"},
		{"deleting the application's namespace", func() error {
			return agent.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}})
		}, "drover's agent deletes only the namespaces of its drills' sandboxes"},
		{"labelling the application's namespace as a drill's sandbox, to delete it next", func() error {
			return agent.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"drover.io/drill":"x"}}}`)))
		}, "drover's agent never adds or removes the drill label"},
		{"a Role the restore did not label", func() error {
			return agent.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "unlabelled"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}})
		}, "drover's agent writes only the Roles and RoleBindings it restores"},
		{"a restored Role in a namespace that holds no group", func() error {
			return agent.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "restored", Labels: restored},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}})
		}, "ValidatingAdmissionPolicy 'drover-agent-rbac'"},
		{"a ConfigMap in kube-system", func() error {
			return agent.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-override"}})
		}, "drover's agent writes nothing in a system namespace"},
	}
	for _, r := range refused {
		// The API server compiles a new policy within a second or so.
		g.Eventually(r.do).WithTimeout(10*time.Second).WithPolling(200*time.Millisecond).
			Should(MatchError(ContainSubstring(r.want)), "%s was not refused", r.name)
		t.Logf("%s: refused", r.name)
	}

	allowed := []struct {
		name string
		do   func() error
	}{
		{"the fence's dry-run probe", func() error { return agent.Create(ctx, probePod(app), client.DryRunAll) }},
		{"deleting the VolSync key Secret it made", func() error { return agent.Delete(ctx, key.DeepCopy()) }},
		{"a restored Role in the application's namespace", func() error {
			return agent.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "reader", Labels: restored},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}})
		}},
		{"a drill's sandbox namespace, created labelled and deleted", func() error {
			sandbox := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app + "-drill-0a1b2c3d", Labels: map[string]string{
				"drover.io/drill": "0a1b2c3d", "pod-security.kubernetes.io/enforce": "restricted"}}}
			if err := agent.Create(ctx, sandbox); err != nil {
				return err
			}
			return agent.Delete(ctx, sandbox)
		}},
		{"the fence's own configuration", func() error {
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := agent.Get(ctx, client.ObjectKey{Name: "drover-fence"}, vwc); err != nil {
				return err
			}
			before := vwc.DeepCopy()
			vwc.Annotations = map[string]string{"test.drover.io/touched": "yes"}
			return agent.Patch(ctx, vwc, client.MergeFrom(before))
		}},
	}
	for _, a := range allowed {
		g.Expect(a.do()).To(Succeed(), a.name)
	}
}

// probePod is a pod mounting a PVC, as the fence's probe makes it.
func probePod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "probe"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
}
