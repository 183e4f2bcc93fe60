package config_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTheAgentNeverLowersANamespacesPodSecurity applies the agent's release manifests and acts
// as the agent's ServiceAccount, which may patch and create namespaces (a restore labels the
// failed-over namespace with the source's level; a drill makes its sandboxes): the shipped
// policy drover-agent-identity refuses lowering a namespace's enforced level, removing it, or
// creating a namespace enforcing less than baseline, and lets it raise one.
func TestTheAgentNeverLowersANamespacesPodSecurity(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	kubectlApply(t, g, build(g, "agent"))
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: agentUser}
	agent, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	const app = "psa-app"
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}))).To(Succeed())
	label := func(patch string) func() error {
		return func() error {
			return agent.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}}, client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
		}
	}
	refused := []struct {
		name string
		do   func() error
	}{
		{"lowering the application's namespace to privileged", label(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)},
		{"removing its enforce label", label(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`)},
		{"creating a sandbox enforcing privileged", func() error {
			return agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app + "-drill-1", Labels: map[string]string{
				"drover.io/drill": "1", "pod-security.kubernetes.io/enforce": "privileged"}}}, client.DryRunAll)
		}},
		{"creating a sandbox enforcing nothing", func() error {
			return agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app + "-drill-2", Labels: map[string]string{
				"drover.io/drill": "2"}}}, client.DryRunAll)
		}},
	}
	var accepted []string
	for _, r := range refused {
		if err := refusedWithin(5*time.Second, r.do); err != nil {
			t.Logf("%s: %v", r.name, err)
			continue
		}
		accepted = append(accepted, r.name)
		t.Logf("%s: ACCEPTED", r.name)
	}
	g.Expect(accepted).To(BeEmpty(), "the agent's identity may: %s", strings.Join(accepted, "; "))
	g.Expect(label(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)()).To(Succeed(), "raising the level")
	g.Expect(agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app + "-drill-3", Labels: map[string]string{
		"drover.io/drill": "3", "pod-security.kubernetes.io/enforce": "restricted"}}}, client.DryRunAll)).To(Succeed(), "a restricted sandbox")
}
