package kubelet

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlacementPolicyPutsUnscheduledPodsOnTheNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	other := newNamespace(t, g)
	policy, binding := PlacementPolicy(DefaultNodeName, ns)
	_, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
	})

	// The policy takes effect once the API server's policy cache has it: retry the create.
	g.Eventually(func(g Gomega) {
		pod := probePod(ns, "placed")
		pod.Spec.NodeName = ""
		got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil && got.Spec.NodeName != DefaultNodeName {
			_ = cs.CoreV1().Pods(ns).Delete(ctx, "placed", metav1.DeleteOptions{})
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Spec.NodeName).To(Equal(DefaultNodeName))
	}).Should(Succeed())
	readyPod(g, ns, "placed")

	pod := probePod(other, "elsewhere")
	pod.Spec.NodeName = ""
	got, err := cs.CoreV1().Pods(other).Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Spec.NodeName).To(BeEmpty(), "pods of other namespaces are left to the scheduler")
}
