package vrg

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/metrics/metricstest"
)

// hookedSource is a relocation's source whose recipe has one hook at BeforeStop and the given
// runs recorded.
func hookedSource(hook v1alpha1.Hook, runs ...v1alpha1.HookRun) *scope {
	vrg := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 4},
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary, Action: v1alpha1.ActionRelocate,
			FinalSyncRequest: "r1", Recipe: &v1alpha1.VRGRecipe{Name: "db", Action: "a1", Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{hook}}}},
		Status: v1alpha1.VolumeReplicationGroupStatus{State: v1alpha1.StatePrimary, ObservedGeneration: 3, Hooks: runs},
	}
	return newScope(vrg)
}

func TestAnExecThatRanWhenTheAgentRestartedIsNeverRunAgainByItself(t *testing.T) {
	hook := v1alpha1.Hook{Name: "stop", Point: v1alpha1.HookBeforeStop, Exec: &v1alpha1.ExecHook{Namespace: "app",
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Command: []string{"pg_ctl", "stop"}}}
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	sc := hookedSource(hook, v1alpha1.HookRun{Name: "stop", Point: v1alpha1.HookBeforeStop, Action: "a1", Attempt: 1,
		Result: v1alpha1.HookRunning, StartTime: &started},
		v1alpha1.HookRun{Name: "gone", Action: "a0", Attempt: 2, Result: v1alpha1.HookSucceeded})
	r := &Reconciler{}
	if _, err := r.sourceHooks(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if !sc.stop {
		t.Fatal("the pass goes on to stop the workload")
	}
	if len(sc.vrg.Status.Hooks) != 1 {
		t.Fatalf("the run of another action is kept: %+v", sc.vrg.Status.Hooks)
	}
	run := sc.vrg.Status.Hooks[0]
	if run.Result != v1alpha1.HookFailed || run.Attempt != 1 || !strings.Contains(run.Message, "the agent restarted while this exec ran") {
		t.Fatalf("run = %+v", run)
	}
	if fl := r.hookRuns.get(hookKey{group: client.ObjectKeyFromObject(sc.vrg), hook: "stop", action: "a1", attempt: 1}); fl != nil {
		t.Fatal("the exec was started again")
	}
	c := sc.hookCondition
	if c == nil || c.Type != v1alpha1.ConditionDataReady || c.Reason != v1alpha1.ReasonHookFailed ||
		!strings.Contains(c.Message, "drover relocate db --retry") || !strings.Contains(c.Message, "drover relocate db --continue") {
		t.Fatalf("condition = %+v", c)
	}
	sc.vrg.Status.State, sc.vrg.Status.ObservedGeneration, sc.vrg.Status.LastGroupSyncTime = v1alpha1.StateSecondary, 4, nil
	sc.before.Status.LastGroupSyncTime = &started
	applyHookCondition(sc)
	if st := sc.vrg.Status; st.State != v1alpha1.StatePrimary || st.ObservedGeneration != 3 || st.LastGroupSyncTime == nil {
		t.Fatalf("a source held at a hook looks demoted: %s, generation %d, last sync %v", st.State, st.ObservedGeneration, st.LastGroupSyncTime)
	}
	if len(sc.vrg.Status.Hooks) != 1 || sc.vrg.Status.Conditions[0].Reason != v1alpha1.ReasonHookFailed {
		t.Fatalf("the runs or DataReady were not written: %+v", sc.vrg.Status)
	}
}

func TestACheckThatRanWhenTheAgentRestartedRunsAgainAndAContinueRecordsIt(t *testing.T) {
	hook := v1alpha1.Hook{Name: "ready", Point: v1alpha1.HookBeforeStop, OnError: v1alpha1.HookContinue,
		Check: &v1alpha1.CheckHook{Object: v1alpha1.CheckObject{APIVersion: "v1", Kind: "ConfigMap", Namespace: "app", Name: "x"}, Expression: "true"}}
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	sc := hookedSource(hook, v1alpha1.HookRun{Name: "ready", Point: v1alpha1.HookBeforeStop, Action: "a1", Attempt: 1,
		Result: v1alpha1.HookRunning, StartTime: &started})
	scheme, err := testScheme()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Metrics: NewMetrics(fake.NewClientBuilder().WithScheme(scheme).Build(), "east")} // no runner: the run fails at once, saying so
	if _, err := r.sourceHooks(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	run := sc.vrg.Status.Hooks[0]
	if run.Result != v1alpha1.HookContinued || !strings.Contains(run.Message, "runs no hooks") || !run.StartTime.Equal(&started) {
		t.Fatalf("run = %+v", run)
	}
	if sc.stop || sc.hookCondition != nil {
		t.Fatalf("a Continued hook holds the relocation: stop %t, %+v", sc.stop, sc.hookCondition)
	}
	g := NewWithT(t)
	g.Expect(metricstest.Text(g, r.Metrics)).To(ContainSubstring(
		`drover_hook_runs_total{cluster="east",hook="ready",name="db",namespace="app",point="BeforeStop",result="Continued"} 1`))
}

func TestAPromotedTargetRunsItsAfterReadyHooksOnlyOnceItsWorkloadsAreReady(t *testing.T) {
	hook := v1alpha1.Hook{Name: "ready", Point: v1alpha1.HookAfterReady,
		Check: &v1alpha1.CheckHook{Object: v1alpha1.CheckObject{APIVersion: "v1", Kind: "ConfigMap", Namespace: "app", Name: "x"}, Expression: "true"}}
	sc := hookedSource(hook)
	sc.vrg.Spec.ReplicationState, sc.vrg.Spec.Action = v1alpha1.ReplicationStatePrimary, v1alpha1.ActionNone
	r := &Reconciler{}
	if _, err := r.targetHooks(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	sc.vrg.Spec.Action = v1alpha1.ActionFailover
	sc.workloadsReady = &metav1.Condition{Type: v1alpha1.ConditionWorkloadsReady, Status: metav1.ConditionFalse}
	if _, err := r.targetHooks(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.vrg.Status.Hooks) != 0 || sc.hookCondition != nil {
		t.Fatalf("a hook ran before the workloads are Ready: %+v", sc.vrg.Status.Hooks)
	}
	sc.workloadsReady.Status = metav1.ConditionTrue
	if _, err := r.targetHooks(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	c := sc.hookCondition
	if len(sc.vrg.Status.Hooks) != 1 || c == nil || c.Type != v1alpha1.ConditionWorkloadsReady || c.Reason != v1alpha1.ReasonHookFailed ||
		!strings.Contains(c.Message, "drover failover db --retry") {
		t.Fatalf("runs %+v, condition %+v", sc.vrg.Status.Hooks, c)
	}
}
