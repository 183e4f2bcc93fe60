package hub_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// DRClusters and DRPolicies are validated against what exists: the lab's clusters are
// Validated and Reachable; a cluster without its kubeconfig Secret is not, and neither is a
// policy pairing it; a DRPlacementControl of that policy does nothing and says why.
func TestClustersAndPoliciesAreValidatedAgainstWhatExists(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())

	condOf := func(conds []metav1.Condition, t string) metav1.Condition {
		for _, c := range conds {
			if c.Type == t {
				return c
			}
		}
		return metav1.Condition{Type: t, Status: metav1.ConditionUnknown}
	}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{lab.East, lab.West} {
			drc := &v1alpha1.DRCluster{}
			g.Expect(h.Get(ctx, client.ObjectKey{Name: name}, drc)).To(Succeed())
			g.Expect(condOf(drc.Status.Conditions, v1alpha1.ConditionValidated).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condOf(drc.Status.Conditions, v1alpha1.ConditionReachable).Status).To(Equal(metav1.ConditionTrue))
		}
		p := &v1alpha1.DRPolicy{}
		g.Expect(h.Get(ctx, client.ObjectKey{Name: policyVolRep}, p)).To(Succeed())
		g.Expect(condOf(p.Status.Conditions, v1alpha1.ConditionValidated).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "the lab's clusters and policy are Validated")

	north := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: "north"}, Spec: v1alpha1.DRClusterSpec{
		KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: lab.S3SecretNamespace, Name: "kubeconfig-north"},
		S3ProfileName:       "s3-north", Region: "north",
	}}
	g.Expect(h.Create(ctx, north)).To(Succeed())
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "east-north"}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{lab.East, "north"}, SchedulingInterval: "1m",
		StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
		S3Profiles: []v1alpha1.S3Profile{{Name: "s3-east", Endpoint: "http://127.0.0.1:1", Bucket: "drover",
			SecretRef: v1alpha1.SecretRef{Namespace: lab.S3SecretNamespace, Name: "s3-east"}}},
	}}
	g.Expect(h.Create(ctx, policy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		drc := &v1alpha1.DRCluster{}
		g.Expect(h.Get(ctx, client.ObjectKey{Name: "north"}, drc)).To(Succeed())
		v := condOf(drc.Status.Conditions, v1alpha1.ConditionValidated)
		g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNoKubeconfig))
		g.Expect(v.Message).To(ContainSubstring("kubeconfig-north"))
		p := &v1alpha1.DRPolicy{}
		g.Expect(h.Get(ctx, client.ObjectKey{Name: "east-north"}, p)).To(Succeed())
		pv := condOf(p.Status.Conditions, v1alpha1.ConditionValidated)
		g.Expect(pv.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(pv.Message).To(ContainSubstring("DRCluster north is not Validated"))
		g.Expect(pv.Message).To(ContainSubstring(`names S3 profile "s3-north", which spec.s3Profiles does not define`))
	}).Should(Succeed(), "north and its policy are reported, with what to do")

	ns := "hub-invalid"
	a := newApp(t, ns)
	d := a.drpcFor(false)
	d.Spec.DRPolicyRef.Name = "east-north"
	g.Expect(h.Create(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := a.drpc(g)
		v := cond(got, v1alpha1.ConditionValidated)
		g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(v.Reason).To(Equal(v1alpha1.ReasonPolicyNotValidated))
	}).Should(Succeed())
	notes := a.expectEvents(v1alpha1.EventValidationFailed)
	g.Expect(notes[v1alpha1.EventValidationFailed]).To(ContainElement(ContainSubstring("PolicyNotValidated: DRPolicy east-north is not Validated")))
	vrg := &v1alpha1.VolumeReplicationGroup{}
	err = a.clusters[lab.East].Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, vrg)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "nothing is created for a DRPlacementControl of a policy that is not Validated")
	g.Expect(h.Delete(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(client.IgnoreNotFound(h.Get(ctx, client.ObjectKeyFromObject(d), &v1alpha1.DRPlacementControl{}))).To(Succeed())
		err := h.Get(ctx, client.ObjectKeyFromObject(d), &v1alpha1.DRPlacementControl{})
		g.Expect(err).To(HaveOccurred())
	}).Should(Succeed(), "deleting it completes")
}
