package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/config"
	"github.com/drover-io/drover/internal/lab"
)

// Until the API server's discovery knows the kind a policy's parameters are (the
// VolumeReplicationGroup CRD, installed with the agent), it refuses every request that policy
// matches. drover-agent-rbac must then refuse only the Roles and RoleBindings drover restores,
// never the cluster's own RBAC: the test installs a copy of the release's policy whose paramKind
// is never resolved, confined to one namespace, and writes there a RoleBinding drover restores
// (refused: the policy is live) and one of the cluster's own (admitted).
func TestTheAgentsRBACPolicyNeverRefusesTheClustersOwnRBACWhileItsParamKindIsUnresolved(t *testing.T) {
	g := newG(t)
	ctx := t.Context()
	east, err := testLab.Client(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "rbac-unresolved"
	g.Expect(client.IgnoreAlreadyExists(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	policy, binding := unresolvedAgentRBACPolicy(g, ns)
	for _, obj := range []client.Object{policy, binding} {
		g.Expect(east.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = east.Delete(context.Background(), obj) })
	}
	c := cluster(g, lab.East)
	admin, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(admin)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	roleBinding := func(labels map[string]string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: ns, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}
	}
	g.Eventually(func() error {
		_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, roleBinding(map[string]string{"drover.io/restored-rbac": "true"}), dryRun)
		return err
	}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(MatchError(ContainSubstring("paramKind")),
		"the copy of drover-agent-rbac refuses a RoleBinding drover restores while its paramKind is unresolved")
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, roleBinding(nil), dryRun)
	t.Logf("the cluster's own RoleBinding, under the unresolved policy: %v", err)
	g.Expect(err).NotTo(HaveOccurred(), "drover-agent-rbac refuses RBAC drover did not write")
}

// unresolvedAgentRBACPolicy reads drover-agent-rbac and its binding from the release manifests
// and returns copies named drover-agent-rbac-unresolved whose paramKind names a kind no API
// server serves and whose namespace selectors admit namespace ns alone.
func unresolvedAgentRBACPolicy(g Gomega, ns string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	raw, err := config.Tree.ReadFile("agent/base/identity_policy.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var doc struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		var js json.RawMessage
		err := dec.Decode(&js)
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(json.Unmarshal(js, &doc)).To(Succeed())
		if doc.Metadata.Name != "drover-agent-rbac" {
			continue
		}
		switch doc.Kind {
		case "ValidatingAdmissionPolicy":
			policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			g.Expect(json.Unmarshal(js, policy)).To(Succeed())
		case "ValidatingAdmissionPolicyBinding":
			binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			g.Expect(json.Unmarshal(js, binding)).To(Succeed())
		}
	}
	g.Expect(policy).NotTo(BeNil(), "the release manifests hold the policy drover-agent-rbac")
	g.Expect(binding).NotTo(BeNil(), "the release manifests hold the binding drover-agent-rbac")
	onlyNS := metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns}}
	policy.Name = "drover-agent-rbac-unresolved"
	policy.Spec.ParamKind.Kind = "KindNoServerServes"
	if policy.Spec.MatchConstraints.NamespaceSelector == nil {
		policy.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{}
	}
	sel := policy.Spec.MatchConstraints.NamespaceSelector
	sel.MatchExpressions = append(sel.MatchExpressions, onlyNS)
	binding.Name, binding.Spec.PolicyName = policy.Name, policy.Name
	bsel := binding.Spec.MatchResources.NamespaceSelector
	bsel.MatchExpressions = append(bsel.MatchExpressions, onlyNS)
	return policy, binding
}
