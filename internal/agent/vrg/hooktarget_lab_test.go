package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
)

// checkAt is an AfterReady check hook of a CEL expression over the StatefulSet db of ns.
func checkAt(name, ns, expression string, timeout time.Duration) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Point: v1alpha1.HookAfterReady, Timeout: &metav1.Duration{Duration: timeout},
		Check: &v1alpha1.CheckHook{Object: v1alpha1.CheckObject{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: "db"},
			Expression: expression}}
}

// A relocation's target runs its AfterReady hooks once the restored workload is Ready: a check
// that holds succeeds; a check with onError Fail that does not hold within its timeout keeps
// WorkloadsReady False with reason HookFailed, saying what it last saw and how to go on, until a
// person's Continue passes it over and WorkloadsReady turns True.
func TestARelocationsTargetRunsItsAfterReadyHooksOnceTheWorkloadIsReady(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	ns, groupNS := "hooks-target-app", "hooks-target-dr"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	}
	// Each cluster's administrator allows hooks in the namespace there: the label is the
	// cluster's, never restored from a capture, so west's is made before the relocation (the
	// restore adopts the namespace it finds).
	g.Expect(east.Create(ctx, hooksNamespace(ns))).To(Succeed())
	g.Expect(west.Create(ctx, hooksNamespace(ns))).To(Succeed())
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 1, 100*time.Millisecond))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	westGroup.Spec.Recipe = &v1alpha1.VRGRecipe{Name: "db", Action: "relocate-1", Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{
		checkAt("ready", ns, "self.status.readyReplicas == self.spec.replicas", 30*time.Second),
		checkAt("smoke", ns, "self.status.readyReplicas == 7", 5*time.Second),
	}}}
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	expectCapturedAndProtected(g, ctx, east, eastGroup, stores, ns, 1)

	relocateFrom(ctx, g, east, eastGroup)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
	}).Should(Succeed(), "east stops the workload and is Secondary with the final sync")
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)

	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, west, westGroup)
		g.Expect(runs["ready"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(runs["smoke"].Result).To(Equal(v1alpha1.HookFailed))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionWorkloadsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonHookFailed))
		g.Expect(c.Message).To(And(ContainSubstring("hook smoke (check at AfterReady, attempt 1)"), ContainSubstring("timed out after 5s"),
			ContainSubstring("self.status.readyReplicas == 7 is false"), ContainSubstring("drover relocate db --continue")))
	}).Should(Succeed(), "the failed smoke check holds WorkloadsReady once the workload is Ready")

	decide(ctx, g, west, westGroup, v1alpha1.HookDecision{Hook: "smoke", Attempt: 1, Decision: v1alpha1.HookContinueAction})
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, west, westGroup)
		g.Expect(runs["smoke"].Result).To(Equal(v1alpha1.HookPassedOver))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionWorkloadsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed(), "the Continue decision lets WorkloadsReady turn True")
}
