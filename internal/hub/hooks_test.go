package hub_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// A DRRecipe is checked against its DRPlacementControl on the hub's real API server: one that
// names a namespace the DRPlacementControl does not protect is refused and nothing is done; once
// fixed (the hub watches DRRecipes, so sooner than its retry of an invalid spec) both groups
// carry it with its namespaces filled in; a hook that failed on a cluster (written here as the
// agent would) shows in the DRPlacementControl's status.hooks and PeerReady, with its output,
// and a retry of it is handed to that cluster's group only.
func TestARecipeIsCheckedCopiedIntoTheGroupsAndItsFailedHookShown(t *testing.T) {
	a := newApp(t, "hub-hooks")
	ctx := context.Background()
	db := metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	recipe := &v1alpha1.DRRecipe{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "postgres"}, Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{
		{Name: "checkpoint", Point: v1alpha1.HookBeforeSync, Exec: &v1alpha1.ExecHook{Namespace: "billing", PodSelector: db,
			Command: []string{"psql", "-c", "CHECKPOINT"}}},
	}}}
	a.g.Expect(a.hub.Create(ctx, recipe)).To(Succeed())
	d := a.drpcFor(false)
	d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	a.g.Expect(a.hub.Create(ctx, d)).To(Succeed())
	a.g.Eventually(func(g Gomega) {
		v := cond(a.drpc(g), v1alpha1.ConditionValidated)
		g.Expect(v.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
		g.Expect(v.Message).To(ContainSubstring("DRRecipe postgres: hook checkpoint names namespace billing, which DRPlacementControl db does not protect"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	a.g.Expect(a.clusters[lab.East].Get(ctx, a.key, &v1alpha1.VolumeReplicationGroup{})).NotTo(Succeed(), "nothing is done for a refused recipe")

	a.g.Eventually(func(g Gomega) {
		r := &v1alpha1.DRRecipe{}
		g.Expect(a.hub.Get(ctx, client.ObjectKeyFromObject(recipe), r)).To(Succeed())
		r.Spec.Hooks[0].Exec.Namespace = ""
		g.Expect(a.hub.Update(ctx, r)).To(Succeed())
	}).Should(Succeed())
	fixed := time.Now()
	a.g.Eventually(func(g Gomega) {
		for _, c := range []string{lab.East, lab.West} {
			v := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(a.clusters[c].Get(ctx, a.key, v)).To(Succeed())
			g.Expect(v.Spec.Recipe).NotTo(BeNil())
			g.Expect(v.Spec.Recipe.Spec.Hooks[0].Exec.Namespace).To(Equal(a.ns))
		}
	}).WithTimeout(25*time.Second).Should(Succeed(), "the recipe's fix is seen at once, not at the next retry of an invalid spec")
	t.Logf("the fixed recipe reached both groups %s after the fix", time.Since(fixed).Round(time.Millisecond))

	a.g.Eventually(func(g Gomega) {
		v := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(a.clusters[lab.East].Get(ctx, a.key, v)).To(Succeed())
		v.Status.Hooks = []v1alpha1.HookRun{{Name: "checkpoint", Point: v1alpha1.HookBeforeSync, Action: v.Spec.Recipe.Action, Attempt: 1,
			Result: v1alpha1.HookFailed, ExitCode: ptr.To[int32](2), Output: "psql: error: connection refused"}}
		g.Expect(a.clusters[lab.East].Status().Update(ctx, v)).To(Succeed())
	}).Should(Succeed())
	a.g.Eventually(func(g Gomega) {
		got := a.drpc(g)
		g.Expect(got.Status.Hooks).To(ContainElement(And(HaveField("Name", "checkpoint"), HaveField("Cluster", lab.East),
			HaveField("Result", v1alpha1.HookFailed))))
		p := cond(got, v1alpha1.ConditionPeerReady)
		g.Expect(p.Reason).To(Equal(v1alpha1.ReasonHookFailed))
		g.Expect(p.Message).To(And(ContainSubstring("hook checkpoint (BeforeSync) failed on "+lab.East+" at attempt 1 with exit code 2"),
			ContainSubstring("output: psql: error: connection refused"), ContainSubstring("--retry")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	a.expectEvents(v1alpha1.EventHookFailed)

	// A person's retry (drover relocate db --retry writes this) reaches east's group only.
	a.g.Eventually(func(g Gomega) {
		got := a.drpc(g)
		got.Spec.HookDecision = &v1alpha1.HookDecision{Hook: "checkpoint", Attempt: 1, Decision: v1alpha1.HookRetry}
		g.Expect(a.hub.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	a.g.Eventually(func(g Gomega) {
		east, west := &v1alpha1.VolumeReplicationGroup{}, &v1alpha1.VolumeReplicationGroup{}
		g.Expect(a.clusters[lab.East].Get(ctx, a.key, east)).To(Succeed())
		g.Expect(a.clusters[lab.West].Get(ctx, a.key, west)).To(Succeed())
		g.Expect(east.Spec.Recipe.Decisions).To(ConsistOf(HaveField("Hook", "checkpoint")))
		g.Expect(west.Spec.Recipe.Decisions).To(BeEmpty(), "west's hook did not fail")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
