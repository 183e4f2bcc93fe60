package drpc

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// dbRecipe is a small PostgreSQL recipe of namespace app: a stop hook before a relocation, a
// check after the restore and a migration Job after Ready.
func dbRecipe() *v1alpha1.DRRecipe {
	db := metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	return &v1alpha1.DRRecipe{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "postgres"},
		Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{
			{Name: "stop-db", Point: v1alpha1.HookBeforeStop,
				Exec: &v1alpha1.ExecHook{PodSelector: db, Command: []string{"pg_ctl", "stop", "-m", "fast", "-W"}}},
			{Name: "claim-bound", Point: v1alpha1.HookAfterRestore,
				Check: &v1alpha1.CheckHook{Object: v1alpha1.CheckObject{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "data-db-0"},
					Expression: "self.status.phase == 'Bound'"}},
			{Name: "migrate", Point: v1alpha1.HookAfterReady, Job: &v1alpha1.JobHook{Template: &batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "m", Image: "migrate"}}}}}}},
		}},
	}
}

// recipeWorld is a world whose DRPlacementControl names dbRecipe, created on the hub.
func recipeWorld(t *testing.T) *world {
	t.Helper()
	d := appDRPC()
	d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	w := newWorld(t, d)
	w.g.Expect(w.hub.Create(context.Background(), dbRecipe())).To(Succeed())
	return w
}

// editRecipe changes the recipe on the hub.
func (w *world) editRecipe(change func(*v1alpha1.DRRecipeSpec)) {
	w.t.Helper()
	r := &v1alpha1.DRRecipe{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "postgres"}, r)).To(Succeed())
	change(&r.Spec)
	w.g.Expect(w.hub.Update(context.Background(), r)).To(Succeed())
}

// reportHook plays the agent of cluster recording a run in its group's status.hooks.
func (w *world) reportHook(cluster string, run v1alpha1.HookRun) {
	w.t.Helper()
	v := w.vrg(cluster)
	run.Action = v.Spec.Recipe.Action
	v.Status.Hooks = append(v.Status.Hooks, run)
	w.g.Expect(w.clusters[cluster].Status().Update(context.Background(), v)).To(Succeed())
}

func TestTheGroupsCarryTheRecipeWithEveryNamespaceFilledIn(t *testing.T) {
	w := recipeWorld(t)
	w.deployed()
	for _, cluster := range []string{"east", "west"} {
		r := w.vrg(cluster).Spec.Recipe
		w.g.Expect(r).NotTo(BeNil(), cluster)
		w.g.Expect(r.Name).To(Equal("postgres"))
		w.g.Expect(r.Action).To(BeEmpty(), "no action ran")
		w.g.Expect(r.Spec.Hooks[0].Exec.Namespace).To(Equal("app"))
		w.g.Expect(r.Spec.Hooks[1].Check.Object.Namespace).To(Equal("app"))
		w.g.Expect(r.Spec.Hooks[2].Job.Namespace).To(Equal("app"))
	}
	w.g.Expect(w.cond(v1alpha1.ConditionValidated).Status).To(Equal(metav1.ConditionTrue))
}

func TestARecipeNamingAForeignNamespaceIsRefusedAndNothingOfItIsCopied(t *testing.T) {
	w := recipeWorld(t)
	w.deployed()
	w.editRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Hooks[0].Exec.Namespace = "billing" })
	w.reconcile()
	v := w.cond(v1alpha1.ConditionValidated)
	w.g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
	w.g.Expect(v.Message).To(ContainSubstring("DRRecipe postgres: hook stop-db names namespace billing, which DRPlacementControl app does not protect"))
	w.g.Expect(w.vrg("east").Spec.Recipe.Spec.Hooks[0].Exec.Namespace).To(Equal("app"), "the group keeps the copy taken before")

	w.editRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Hooks[0].Exec.Namespace = "" })
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionValidated).Status).To(Equal(metav1.ConditionTrue))
}

func TestAMissingRecipeIsNamedInValidated(t *testing.T) {
	d := appDRPC()
	d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	w := newWorld(t, d)
	w.reconcile()
	v := w.cond(v1alpha1.ConditionValidated)
	w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNotFound))
	w.g.Expect(v.Message).To(ContainSubstring("DRRecipe postgres, which does not exist in namespace app: create it there, or remove spec.recipeRef"))
	w.g.Expect(w.vrg("east")).To(BeNil(), "nothing is done until it is fixed")
}

func TestTheHubRefusesWhatTheAPIServerCannotCheckInARecipe(t *testing.T) {
	placement := placementDRPC()
	admin := appDRPC()
	admin.Spec.ProtectedNamespaces = []string{"app", "web"}
	for _, tc := range []struct {
		name   string
		drpc   *v1alpha1.DRPlacementControl
		change func(*v1alpha1.DRRecipeSpec)
		want   string
	}{
		{name: "a check expression that does not compile", drpc: appDRPC(),
			change: func(s *v1alpha1.DRRecipeSpec) { s.Hooks[1].Check.Expression = "self.status.phase ==" },
			want:   "hook claim-bound: check.expression does not compile"},
		{name: "a check expression that is not a bool", drpc: appDRPC(),
			change: func(s *v1alpha1.DRRecipeSpec) { s.Hooks[1].Check.Expression = "'Bound'" },
			want:   "it returns string, not a bool"},
		{name: "a Job run as drover's agent", drpc: appDRPC(),
			change: func(s *v1alpha1.DRRecipeSpec) {
				s.Hooks[2].Job.Template.Template.Spec.ServiceAccountName = "drover-agent"
			},
			want: "hook migrate: job.template runs as ServiceAccount drover-agent, which is drover's own"},
		{name: "groups in placement mode", drpc: placement,
			change: func(s *v1alpha1.DRRecipeSpec) {
				s.Groups = []v1alpha1.RecoveryGroup{{Name: "db", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeStatefulSet}}}}
			},
			want: "in placement mode a GitOps tool creates the application's objects"},
		{name: "a namespace other than its own in placement mode", drpc: placement,
			change: func(s *v1alpha1.DRRecipeSpec) { s.Hooks[0].Exec.Namespace = "web" },
			want:   "(its own namespace in placement mode: app)"},
		{name: "a group in a protected namespace is accepted", drpc: admin,
			change: func(s *v1alpha1.DRRecipeSpec) {
				s.Groups = []v1alpha1.RecoveryGroup{{Name: "web", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeDeployment, Namespace: "web"}}}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := dbRecipe().Spec
			tc.change(&spec)
			got := recipeProblem(tc.drpc, &spec)
			if tc.want == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(ContainSubstring(tc.want))
		})
	}
}

// failingOverToWest deploys on east and fails over to west with east reachable, up to west's
// promotion asked.
func (w *world) failingOverToWest() {
	w.t.Helper()
	w.deployed()
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.agent("east", false)
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
}

func TestTheRecipeCopiedWhenAnActionStartsStaysUntilItEnds(t *testing.T) {
	w := recipeWorld(t)
	w.failingOverToWest()
	key := actionKey(&w.drpc().Status)
	w.g.Expect(key).NotTo(BeEmpty())
	for _, cluster := range []string{"east", "west"} {
		w.g.Expect(w.vrg(cluster).Spec.Recipe.Action).To(Equal(key), cluster)
	}
	w.editRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Hooks = s.Hooks[:1] })
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.Recipe.Spec.Hooks).To(HaveLen(3), "the copy stays as the failover found it")

	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.reconcile()
	west := w.vrg("west").Spec.Recipe
	w.g.Expect(west.Spec.Hooks).To(HaveLen(1), "settled, the copy follows the recipe again")
	w.g.Expect(west.Action).To(Equal(key), "and keeps the failover's key for the runs after it")
}

func TestAFailedHookStopsTheActionWithItsOutputAndARetryGoesToItsClusterOnly(t *testing.T) {
	w := recipeWorld(t)
	recorder := events.NewFakeRecorder(50)
	w.r.Recorder = recorder
	w.failingOverToWest()
	w.reportHook("west", v1alpha1.HookRun{Name: "claim-bound", Point: v1alpha1.HookAfterRestore, Attempt: 1, Result: v1alpha1.HookFailed,
		Duration: &metav1.Duration{Duration: 5 * time.Minute}, Message: "the check did not hold within 5m",
		Output: "last seen: status.phase Pending"})
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Hooks).To(ConsistOf(And(HaveField("Name", "claim-bound"), HaveField("Cluster", "west"),
		HaveField("Result", v1alpha1.HookFailed), HaveField("Action", actionKey(&d.Status)))))
	w.g.Expect(d.Status.Progression).To(Equal(string(ProgressionHookFailed)))
	a := w.cond(v1alpha1.ConditionAvailable)
	w.g.Expect(a.Reason).To(Equal(v1alpha1.ReasonHookFailed))
	w.g.Expect(a.Message).To(And(ContainSubstring("hook claim-bound (AfterRestore) failed on west at attempt 1"),
		ContainSubstring("output: last seen: status.phase Pending"), ContainSubstring("drover failover app -n app --retry")))
	w.g.Expect(eventsWith(recorder, v1alpha1.EventHookFailed)).To(ConsistOf(ContainSubstring("Warning HookFailed Hook claim-bound (AfterRestore) on west, attempt 1: Failed")))

	// A decision for an attempt that did not fail goes nowhere, and says so.
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.HookDecision = &v1alpha1.HookDecision{Hook: "claim-bound", Attempt: 2, Decision: v1alpha1.HookRetry}
	})
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.Recipe.Decisions).To(BeEmpty())
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("answers no failed run, so it is handed to no cluster: what failed is hook claim-bound attempt 1 on west"))
	w.g.Expect(eventsWith(recorder, v1alpha1.EventHookDecisionIgnored)).To(HaveLen(1))

	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) { s.HookDecision.Attempt = 1 })
	w.reconcile()
	retry := v1alpha1.HookDecision{Hook: "claim-bound", Attempt: 1, Decision: v1alpha1.HookRetry}
	w.g.Expect(w.vrg("west").Spec.Recipe.Decisions).To(Equal([]v1alpha1.HookDecision{retry}))
	w.g.Expect(w.vrg("east").Spec.Recipe.Decisions).To(BeEmpty(), "east's hook did not fail")

	// The agent retries: attempt 2 runs; the decision stays with west for the action.
	v := w.vrg("west")
	v.Status.Hooks[0].Attempt, v.Status.Hooks[0].Result = 2, v1alpha1.HookRunning
	w.g.Expect(w.clusters["west"].Status().Update(context.Background(), v)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.Recipe.Decisions).To(Equal([]v1alpha1.HookDecision{retry}))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Reason).To(Equal(v1alpha1.ReasonHookRunning))
}

// eventsWith drains the recorder and returns the events of a reason.
func eventsWith(recorder *events.FakeRecorder, reason string) []string {
	var out []string
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; len(strings.Fields(e)) > 1 && strings.Fields(e)[1] == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestARelocationInPlacementModeStopsTheApplicationOnlyOnceItsStopHooksPassed(t *testing.T) {
	d := placementDRPC()
	d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	w := newWorld(t, d)
	w.g.Expect(w.hub.Create(context.Background(), dbRecipe())).To(Succeed())
	w.deployed()
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	w.agent("east", true) // acknowledged: fenced, its PVCs still in use
	w.reportHook("east", v1alpha1.HookRun{Name: "stop-db", Point: v1alpha1.HookBeforeStop, Attempt: 1, Result: v1alpha1.HookRunning})
	w.reconcile()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}), "the application runs on east while its stop hook runs there")

	v := w.vrg("east")
	v.Status.Hooks[0].Result = v1alpha1.HookFailed
	w.g.Expect(w.clusters["east"].Status().Update(context.Background(), v)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}), "nor once it failed: the person retries or continues it")
	w.g.Expect(w.drpc().Status.Progression).To(Equal(string(ProgressionHookFailed)))

	v = w.vrg("east")
	v.Status.Hooks[0].Result = v1alpha1.HookSucceeded
	w.g.Expect(w.clusters["east"].Status().Update(context.Background(), v)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.decision()).To(BeEmpty(), "stopped once the stop hook passed, before the final sync")
}
