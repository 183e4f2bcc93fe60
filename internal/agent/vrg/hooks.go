package vrg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// The application's hooks (docs/decisions/0011-application-hooks.md), run at two points of an
// action, and, on a primary with VolSync PVCs, before each sync (volsync_cycles.go,
// docs/decisions/0019-before-sync-hooks-drive-volsync.md):
//
//   - A relocation's source (secondary, action Relocate, a final sync asked and not done, the
//     group not yet Secondary) runs its BeforeSync hooks, then its BeforeStop hooks, while the
//     workload still runs: no later phase (the workloads' removal, the fence, the demotion that
//     starts the final sync) runs until every one passed. DataReady, which the hub's relocation
//     waits on, says HookRunning or HookFailed meanwhile. In self-contained mode a recipe's
//     groups then stop one by one, the last first, each after its own BeforeStop hooks
//     (stoporder.go); otherwise every BeforeStop hook runs here, those of no group first, then
//     each group's in the order the groups would stop (hooks.StopOrder).
//   - A promoted target (failover or relocation) runs its AfterReady hooks once WorkloadsReady
//     is True; WorkloadsReady, which the hub's Available follows, stays False (HookRunning,
//     HookFailed) until every one passed.
//
// A hook runs in a goroutine, not on the reconciler's worker (a hook may run up to an hour): the
// pass that starts it waits for it at most hookPassWait, then records it Running and requeues,
// and a later pass records its end. The
// runs live in status.hooks, the latest attempt of each hook of the recipe's action. An agent
// restarted while a hook ran finds it Running with no goroutine: a Job hook waits again for the
// same Job (its name is the attempt's), a scale or a check runs again (both only wait for a
// state), and an exec is recorded failed with a message that says its end is unknown: it is
// never run twice for one attempt, since a command such as a shutdown or a migration may not
// bear it; a person retries or continues it.

const (
	// requeueHooks is how often a group looks at a hook that runs.
	requeueHooks = time.Second
	// hookPassWait is how long a pass waits for a hook it looks at to end before it records it
	// Running and returns: most hooks (a CHECKPOINT, a flag written) end within it, so their
	// end is recorded, and the next hook started, in the pass that started them.
	hookPassWait = time.Second
)

// hookKey names one attempt of one hook of one action of one group.
type hookKey struct {
	group        types.NamespacedName
	hook, action string
	attempt      int32
}

// hookFlight is a hook that runs, or has run, in a goroutine.
type hookFlight struct {
	started time.Time
	done    chan struct{}
	outcome hooks.Outcome
}

// hookFlights are the hooks the agent runs; the zero value is ready.
type hookFlights struct {
	mu    sync.Mutex
	byKey map[hookKey]*hookFlight
}

// start runs fn in a goroutine under key, unless a run under key exists; it returns the run.
func (f *hookFlights) start(key hookKey, fn func(context.Context) hooks.Outcome) *hookFlight {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.byKey[key]; fl != nil {
		return fl
	}
	if f.byKey == nil {
		f.byKey = map[hookKey]*hookFlight{}
	}
	fl := &hookFlight{started: time.Now(), done: make(chan struct{})}
	f.byKey[key] = fl
	go func() {
		defer close(fl.done)
		// Not the pass's context: the hook outlives the pass; Run bounds it by its timeout.
		fl.outcome = fn(context.Background())
	}()
	return fl
}

func (f *hookFlights) get(key hookKey) *hookFlight {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key]
}

// forgetRecorded drops the finished runs the group's status has recorded.
func (f *hookFlights) forgetRecorded(group types.NamespacedName, runs []v1alpha1.HookRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, run := range runs {
		if run.Result != v1alpha1.HookRunning {
			delete(f.byKey, hookKey{group: group, hook: run.Name, action: run.Action, attempt: run.Attempt})
		}
	}
}

// relocationSource reports whether the group is a relocation's source that has not stopped its
// workload for the final sync yet.
func relocationSource(vrg *v1alpha1.VolumeReplicationGroup) bool {
	s := vrg.Spec
	done := vrg.Status.FinalSync != nil && vrg.Status.FinalSync.Request == s.FinalSyncRequest
	return s.ReplicationState == v1alpha1.ReplicationStateSecondary && s.Action == v1alpha1.ActionRelocate &&
		s.FinalSyncRequest != "" && !done && vrg.Status.State != v1alpha1.StateSecondary
}

// sourceHooks runs a relocation's source's BeforeSync and BeforeStop hooks, and stops the pass
// (nothing stops the workload) until they passed.
func (r *Reconciler) sourceHooks(ctx context.Context, sc *scope) (ctrl.Result, error) {
	keepRunsOfAction(sc.vrg)
	recipe := sc.vrg.Spec.Recipe
	if recipe == nil || !relocationSource(sc.vrg) {
		return ctrl.Result{}, nil
	}
	list := append(hooks.OfPoints(&recipe.Spec, v1alpha1.HookBeforeSync), stopHooks(sc.vrg)...)
	done, result := r.runHooks(ctx, sc, list, v1alpha1.ConditionDataReady)
	if !done {
		sc.stop = true
	}
	return result, nil
}

// targetHooks runs a promoted target's AfterReady hooks once its workloads are Ready.
func (r *Reconciler) targetHooks(ctx context.Context, sc *scope) (ctrl.Result, error) {
	keepRunsOfAction(sc.vrg)
	recipe := sc.vrg.Spec.Recipe
	if recipe == nil || !promoting(sc.vrg) {
		return ctrl.Result{}, nil
	}
	ready := workloadsJudged(sc.vrg)
	if sc.workloadsReady != nil {
		ready = sc.workloadsReady.Status == metav1.ConditionTrue
	}
	if !ready {
		return ctrl.Result{}, nil
	}
	list := hooks.OfPoints(&recipe.Spec, v1alpha1.HookAfterReady)
	if orderedRestore(sc.vrg) {
		// Each group's ran in the restore order (order.go), before the next group started.
		list = hooks.OfGroup(&recipe.Spec, v1alpha1.HookAfterReady, "")
	}
	_, result := r.runHooks(ctx, sc, list, v1alpha1.ConditionWorkloadsReady)
	return result, nil
}

// keepRunsOfAction drops from status.hooks the runs of another action than the recipe's, but
// for the runs of a sync cycle begun since that action (volsync_cycles.go), and every run when
// the group has no recipe.
func keepRunsOfAction(vrg *v1alpha1.VolumeReplicationGroup) {
	if vrg.Spec.Recipe == nil {
		vrg.Status.Hooks = nil
		return
	}
	var keep []v1alpha1.HookRun
	for _, run := range vrg.Status.Hooks {
		if run.Action == vrg.Spec.Recipe.Action || cycleOfAction(vrg, run.Action) {
			keep = append(keep, run)
		}
	}
	vrg.Status.Hooks = keep
}

// runHooks runs the hooks of the recipe's action one after another as far as they go in this
// pass. It returns true once every one passed; otherwise sc.hookCondition says which one runs or
// failed, as condType.
func (r *Reconciler) runHooks(ctx context.Context, sc *scope, list []*v1alpha1.Hook, condType string) (bool, ctrl.Result) {
	recipe := sc.vrg.Spec.Recipe
	p := r.advanceHooks(ctx, sc, list, recipe.Action, recipe.Decisions)
	switch {
	case p.done:
		return true, ctrl.Result{}
	case p.failed != nil:
		sc.hookCondition = ptrTo(hookFailedCondition(sc.vrg, condType, *p.failed))
		// A person's decision changes the spec, which wakes the group.
		return false, ctrl.Result{}
	}
	run := p.running
	sc.hookCondition = ptrTo(condition(condType, false, v1alpha1.ReasonHookRunning, fmt.Sprintf(
		"waiting for hook %s (%s, attempt %d) at %s, running since %s", run.Name, hooks.Kind(p.runningHook), run.Attempt,
		run.Point, run.StartTime.UTC().Format(time.RFC3339))))
	return false, ctrl.Result{RequeueAfter: requeueHooks}
}

// hookProgress is how far a list of hooks went in a pass: all passed (done), one failed with
// onError Fail and no decision answers it (failed), or one runs (running).
type hookProgress struct {
	done        bool
	failed      *hooks.Step
	running     *v1alpha1.HookRun
	runningHook *v1alpha1.Hook
}

// advanceHooks runs the hooks one after another, as runs of action answered by decisions, as
// far as they go in this pass, recording each run in status.hooks.
func (r *Reconciler) advanceHooks(ctx context.Context, sc *scope, list []*v1alpha1.Hook, action string, decisions []v1alpha1.HookDecision) hookProgress {
	group := client.ObjectKeyFromObject(sc.vrg)
	r.hookRuns.forgetRecorded(group, sc.before.Status.Hooks)
	for {
		step := hooks.Next(list, sc.vrg.Status.Hooks, action, decisions)
		switch {
		case step.Kind == hooks.StepDone:
			return hookProgress{done: true}
		case step.Kind == hooks.StepFailed && step.PassOver:
			run := *step.Run
			run.Result = v1alpha1.HookPassedOver
			setHookRun(sc.vrg, run)
			r.Metrics.countHook(sc.vrg, run)
			r.event(sc, corev1.EventTypeNormal, v1alpha1.EventHookPassedOver, "Hook %s (attempt %d) passed over, as decided: the %s goes on",
				run.Name, run.Attempt, strings.ToLower(string(sc.vrg.Spec.Action)))
			continue
		case step.Kind == hooks.StepFailed:
			return hookProgress{failed: &step}
		}
		run, finished := r.advanceHook(ctx, sc, step, action)
		setHookRun(sc.vrg, run)
		if !finished {
			return hookProgress{running: &run, runningHook: step.Hook}
		}
		r.recordHookEvent(sc, run)
	}
}

// advanceHook starts the step's attempt, a run of action, or looks at it; it returns the run as
// recorded and whether it has finished.
func (r *Reconciler) advanceHook(ctx context.Context, sc *scope, step hooks.Step, action string) (v1alpha1.HookRun, bool) {
	recipe := sc.vrg.Spec.Recipe
	h := step.Hook
	key := hookKey{group: client.ObjectKeyFromObject(sc.vrg), hook: h.Name, action: action, attempt: step.Attempt}
	run := v1alpha1.HookRun{Name: h.Name, Point: h.Point, Action: action, Attempt: step.Attempt, Result: v1alpha1.HookRunning}
	if step.Run != nil && step.Run.Attempt == step.Attempt {
		run.StartTime = step.Run.StartTime
	}
	fl := r.hookRuns.get(key)
	if fl == nil && run.StartTime != nil && h.Exec != nil {
		return finishRun(run, h, hooks.Outcome{Message: "the agent restarted while this exec ran, so whether it completed is unknown; " +
			"it is not run again by itself, since a command may not bear a second run: look at the application"}), true
	}
	if fl == nil {
		ctrl.LoggerFrom(ctx).Info("Running a hook", "hook", h.Name, "point", h.Point, "attempt", step.Attempt)
		runner, protected := r.Hooks, protectedNamespaces(sc.vrg)
		_, cycle := volsync.CycleTime(action)
		id := hooks.ID{Recipe: recipe.Name, Action: action, Attempt: step.Attempt, Periodic: cycle}
		fl = r.hookRuns.start(key, func(ctx context.Context) hooks.Outcome {
			if runner == nil {
				return hooks.Outcome{Message: "this agent runs no hooks (it was started without a hook runner)"}
			}
			return runner.Run(ctx, h, id, protected)
		})
	}
	if run.StartTime == nil {
		run.StartTime = &metav1.Time{Time: fl.started.Truncate(time.Second)}
	}
	t := time.NewTimer(hookPassWait)
	defer t.Stop()
	select {
	case <-fl.done:
		return finishRun(run, h, fl.outcome), true
	case <-t.C:
		return run, false
	case <-ctx.Done():
		return run, false
	}
}

// finishRun records an outcome in the run: its result by the hook's onError.
func finishRun(run v1alpha1.HookRun, h *v1alpha1.Hook, o hooks.Outcome) v1alpha1.HookRun {
	switch {
	case o.Succeeded:
		run.Result = v1alpha1.HookSucceeded
	case hooks.OnError(h) == v1alpha1.HookContinue:
		run.Result = v1alpha1.HookContinued
	default:
		run.Result = v1alpha1.HookFailed
	}
	if run.StartTime == nil {
		run.StartTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
	run.Duration = &metav1.Duration{Duration: time.Since(run.StartTime.Time).Round(time.Second)}
	run.ExitCode, run.Output, run.Message = o.ExitCode, o.Output, o.Message
	return run
}

// setHookRun records the run in status.hooks, in place of the hook's earlier one.
func setHookRun(vrg *v1alpha1.VolumeReplicationGroup, run v1alpha1.HookRun) {
	for i := range vrg.Status.Hooks {
		if vrg.Status.Hooks[i].Name == run.Name {
			vrg.Status.Hooks[i] = run
			return
		}
	}
	vrg.Status.Hooks = append(vrg.Status.Hooks, run)
}

// recordHookEvent tells a finished run as an event and counts it.
func (r *Reconciler) recordHookEvent(sc *scope, run v1alpha1.HookRun) {
	r.Metrics.countHook(sc.vrg, run)
	switch run.Result {
	case v1alpha1.HookSucceeded:
		if _, cycle := volsync.CycleTime(run.Action); cycle {
			// Every interval: counted, not told (events are for transitions).
			return
		}
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventHookSucceeded, "Hook %s (%s, attempt %d) succeeded in %s: %s",
			run.Name, run.Point, run.Attempt, run.Duration.Duration, run.Message)
	case v1alpha1.HookContinued:
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventHookContinued, "Hook %s (%s, attempt %d) failed, and its onError is Continue: %s",
			run.Name, run.Point, run.Attempt, run.Message)
	default:
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventHookFailed, "Hook %s (%s, attempt %d) failed: %s", run.Name, run.Point, run.Attempt, run.Message)
	}
}

// writeRunEnd adds a failed run's exit code and output tail, when it has them, to a condition's
// message.
func writeRunEnd(b *strings.Builder, run *v1alpha1.HookRun) {
	if run.ExitCode != nil {
		fmt.Fprintf(b, "; exit code %d", *run.ExitCode)
	}
	if run.Output != "" {
		fmt.Fprintf(b, "; output:\n%s\n", run.Output)
	}
}

// hookFailedCondition is condType False with reason HookFailed: the hook, where it ran, its
// exit code and output tail, and what a person can do.
func hookFailedCondition(vrg *v1alpha1.VolumeReplicationGroup, condType string, step hooks.Step) metav1.Condition {
	run := step.Run
	var b strings.Builder
	fmt.Fprintf(&b, "hook %s (%s at %s, attempt %d) failed: %s", run.Name, hooks.Kind(step.Hook), run.Point, run.Attempt, run.Message)
	writeRunEnd(&b, run)
	verb := strings.ToLower(string(vrg.Spec.Action))
	fmt.Fprintf(&b, "; the %s stands at this hook: fix the cause and run `drover %s %s --retry` to run it again, or `drover %s %s --continue` to go on past it",
		verb, verb, vrg.Name, verb, vrg.Name)
	return condition(condType, false, v1alpha1.ReasonHookFailed, b.String())
}

// applyHookCondition writes the hooks' condition over what the pass computed. A relocation's
// source held at a hook stopped nothing: its status stays as it was (not Secondary, its
// generation not observed, its PVCs' syncs kept) but for its hook runs and DataReady.
func applyHookCondition(sc *scope) {
	c := sc.hookCondition
	if c == nil {
		return
	}
	st := &sc.vrg.Status
	if c.Type == v1alpha1.ConditionDataReady {
		held := sc.before.Status.DeepCopy()
		held.Hooks, held.AgentVersion = st.Hooks, st.AgentVersion
		*st = *held
	}
	setConditionStatus(sc.vrg, &st.Conditions, c.Type, c.Status, c.Reason, c.Message)
}
