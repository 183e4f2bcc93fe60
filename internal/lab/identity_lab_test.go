package lab_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/agent"
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
