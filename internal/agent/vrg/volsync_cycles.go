package vrg

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// Sync cycles (docs/decisions/0019-before-sync-hooks-drive-volsync.md): a primary whose recipe
// has BeforeSync hooks drives its VolSync sources with manual triggers, one cycle per scheduling
// interval, instead of VolSync's cron schedule. A cycle is named by the instant it began
// (volsync.CycleTrigger); its hooks run as runs of that name, and the sources get that name as
// spec.trigger.manual only once every hook passed. Each pass finds where the cycles stand from
// the sources and status.hooks alone (decideCycle), so a restarted agent goes on where it was:
//
//	syncing ──(every source's lastManualSync = its trigger)──▶ idle
//	idle ──(the interval since the last cycle began is over)──▶ hooks (a new cycle, now)
//	hooks ──(every hook Succeeded or Continued)──▶ trigger ──(the sources carry it)──▶ syncing
//	hooks ──(a hook with onError Fail failed)──▶ held ──(the interval is over)──▶ hooks (a new cycle)
//
// A held cycle triggers nothing: that interval has no sync, and DataProtected says which hook
// failed, with its output, until a cycle passes. A relocation's final sync (finalsync.go) runs
// on a secondary, where no cycle runs; it takes over whatever trigger the sources carry.

// cycleState is where a group's sync cycles stand.
type cycleState int

const (
	// cycleSyncing: a source's last trigger has not been served by a completed sync yet.
	cycleSyncing cycleState = iota
	// cycleIdle: the last cycle's sync completed and the next cycle is not due.
	cycleIdle
	// cycleHooks: the cycle's hooks run.
	cycleHooks
	// cycleTrigger: every hook of the cycle passed; the sources are to carry its trigger.
	cycleTrigger
	// cycleHeld: a hook of the cycle failed with onError Fail; no sync until the next cycle.
	cycleHeld
)

// requeueCycleSync is how soon a group looks again at a triggered sync (VolSync's change of the
// source wakes it sooner).
const requeueCycleSync = 5 * time.Second

// syncCycle is where a group's sync cycles stand, and what for.
type syncCycle struct {
	state cycleState
	// key names the cycle (cycleHooks, cycleTrigger, cycleHeld): its trigger and its runs' action.
	key string
	// due is when the next cycle begins (cycleIdle, cycleHeld).
	due time.Time
	// syncing names the source whose sync is awaited (cycleSyncing).
	syncing string
}

// decideCycle says where the cycles stand from the BeforeSync hooks, their recorded runs and
// the sources: a cycle whose runs are newer than the sources' trigger is the current one; else
// the next begins an interval after the sources' trigger's (at once when they carry none).
func decideCycle(list []*v1alpha1.Hook, runs []v1alpha1.HookRun, src volsync.Sources, interval time.Duration, now time.Time) syncCycle {
	if src.Syncing != "" {
		return syncCycle{state: cycleSyncing, syncing: src.Syncing}
	}
	if key, at := latestCycle(list, runs); at.After(src.Trigger) {
		step := hooks.Next(list, runs, key, nil)
		switch {
		case step.Kind == hooks.StepDone:
			return syncCycle{state: cycleTrigger, key: key}
		case step.Kind != hooks.StepFailed:
			return syncCycle{state: cycleHooks, key: key}
		case now.Before(at.Add(interval)):
			return syncCycle{state: cycleHeld, key: key, due: at.Add(interval)}
		}
		return syncCycle{state: cycleHooks, key: volsync.CycleTrigger(now)}
	}
	if due := src.Trigger.Add(interval); !src.Trigger.IsZero() && now.Before(due) {
		return syncCycle{state: cycleIdle, due: due}
	}
	return syncCycle{state: cycleHooks, key: volsync.CycleTrigger(now)}
}

// latestCycle is the newest sync cycle among the runs of the hooks, and when it began; zero
// when none ran in a cycle.
func latestCycle(list []*v1alpha1.Hook, runs []v1alpha1.HookRun) (string, time.Time) {
	var key string
	var latest time.Time
	for _, run := range runs {
		at, ok := volsync.CycleTime(run.Action)
		if !ok || !hookListed(list, run.Name) || !at.After(latest) {
			continue
		}
		key, latest = run.Action, at
	}
	return key, latest
}

func hookListed(list []*v1alpha1.Hook, name string) bool {
	for _, h := range list {
		if h.Name == name {
			return true
		}
	}
	return false
}

// passedCycle is the trigger of the newest cycle whose hooks all passed, as status.hooks
// records it; "" when the newest cycle has not passed, none ran, or it ran before the group's
// last action (another time as primary, whose trigger would sync a new source at once).
func passedCycle(vrg *v1alpha1.VolumeReplicationGroup) string {
	if !volsync.ManualSyncs(vrg) {
		return ""
	}
	list := hooks.OfPoints(&vrg.Spec.Recipe.Spec, v1alpha1.HookBeforeSync)
	key, at := latestCycle(list, vrg.Status.Hooks)
	if at.IsZero() || !cycleOfAction(vrg, key) || hooks.Next(list, vrg.Status.Hooks, key, nil).Kind != hooks.StepDone {
		return ""
	}
	return key
}

// cycleOfAction reports whether action names a sync cycle begun since the recipe's action (the
// hub's start of the last failover or relocation): a cycle of this group's time as primary.
func cycleOfAction(vrg *v1alpha1.VolumeReplicationGroup, action string) bool {
	at, ok := volsync.CycleTime(action)
	if !ok {
		return false
	}
	since, err := time.Parse(time.RFC3339, vrg.Spec.Recipe.Action)
	return err != nil || !at.Before(since)
}

// volSyncCycles runs the group's sync cycles when its recipe has BeforeSync hooks and it has
// VolSync PVCs ready to sync: each state of decideCycle has its function.
func (r *Reconciler) volSyncCycles(ctx context.Context, sc *scope) (ctrl.Result, error) {
	vs := r.volSync()
	if vs == nil || !volsync.ManualSyncs(sc.vrg) {
		return ctrl.Result{}, nil
	}
	keepRunsOfAction(sc.vrg)
	ready := cyclePVCs(sc)
	if len(ready) == 0 {
		return ctrl.Result{}, nil
	}
	pcs := make([]*replication.PVCContext, 0, len(ready))
	for _, ps := range ready {
		pcs = append(pcs, ps.protected)
	}
	src, err := vs.ObserveSources(ctx, pcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	list := hooks.OfPoints(&sc.vrg.Spec.Recipe.Spec, v1alpha1.HookBeforeSync)
	now := time.Now()
	c := decideCycle(list, sc.vrg.Status.Hooks, src, sc.interval, now)
	switch c.state {
	case cycleSyncing:
		return ctrl.Result{RequeueAfter: requeueCycleSync}, nil
	case cycleIdle:
		return ctrl.Result{RequeueAfter: max(c.due.Sub(now), time.Second)}, nil
	case cycleHeld:
		return r.holdCycle(sc, list, c, now), nil
	case cycleTrigger:
		return r.triggerCycle(ctx, sc, ready, c.key), nil
	}
	return r.runCycleHooks(ctx, sc, ready, list, c.key), nil
}

// cyclePVCs are the group's VolSync PVCs whose sources a cycle triggers: protected as asked,
// or waiting for their first cycle.
func cyclePVCs(sc *scope) []*pvcState {
	var out []*pvcState
	for _, ps := range sc.pvcs {
		if ps.backend != v1alpha1.BackendVolSync || ps.protected == nil {
			continue
		}
		if ps.result.IsDone() || ps.result.Reason == v1alpha1.ReasonHookRunning {
			out = append(out, ps)
		}
	}
	return out
}

// runCycleHooks runs the cycle's hooks as far as they go in this pass, and triggers the sync
// in the same pass when they passed.
func (r *Reconciler) runCycleHooks(ctx context.Context, sc *scope, ready []*pvcState, list []*v1alpha1.Hook, key string) ctrl.Result {
	p := r.advanceHooks(ctx, sc, list, key, nil)
	switch {
	case p.done:
		return r.triggerCycle(ctx, sc, ready, key)
	case p.failed != nil:
		at, _ := volsync.CycleTime(key)
		return r.holdCycle(sc, list, syncCycle{state: cycleHeld, key: key, due: at.Add(sc.interval)}, time.Now())
	}
	return ctrl.Result{RequeueAfter: requeueHooks}
}

// triggerCycle gives every ready source the cycle's trigger, through the backend's Protect, as
// each pass gives it the last passed cycle's (protectPVC).
func (r *Reconciler) triggerCycle(ctx context.Context, sc *scope, ready []*pvcState, key string) ctrl.Result {
	ctrl.LoggerFrom(ctx).V(1).Info("Triggering a VolSync sync after the BeforeSync hooks", "trigger", key)
	backend, _ := r.Backends.Backend(v1alpha1.BackendVolSync)
	for _, ps := range ready {
		ps.protected.SyncTrigger = key
		ps.result = volSyncKeyResult(sc, ps.key(), backend.Protect(ctx, ps.protected))
	}
	return ctrl.Result{RequeueAfter: requeueCycleSync}
}

// holdCycle makes DataProtected say which hook failed, until the next cycle begins at c.due.
func (r *Reconciler) holdCycle(sc *scope, list []*v1alpha1.Hook, c syncCycle, now time.Time) ctrl.Result {
	step := hooks.Next(list, sc.vrg.Status.Hooks, c.key, nil)
	if step.Kind == hooks.StepFailed {
		sc.syncHookCondition = ptrTo(cycleFailedCondition(step, c.due))
	}
	return ctrl.Result{RequeueAfter: max(c.due.Sub(now), time.Second)}
}

// cycleFailedCondition is DataProtected False with reason HookFailed: the hook, its exit code
// and output tail, that this interval has no sync, and when the hooks run again.
func cycleFailedCondition(step hooks.Step, due time.Time) metav1.Condition {
	run := step.Run
	var b strings.Builder
	fmt.Fprintf(&b, "hook %s (%s at %s, sync cycle %s) failed: %s", run.Name, hooks.Kind(step.Hook), run.Point, run.Action, run.Message)
	writeRunEnd(&b, run)
	fmt.Fprintf(&b, "; the VolSync sync of this interval did not run, so the recovery point is the last sync's: the hooks run again at %s "+
		"and the sync follows once they pass; fix the cause, or set the hook's onError to Continue to sync even when it fails",
		due.UTC().Format(time.RFC3339))
	return condition(v1alpha1.ConditionDataProtected, false, v1alpha1.ReasonHookFailed, b.String())
}

// applySyncHookCondition writes a held cycle's DataProtected over the one the pass computed.
func applySyncHookCondition(sc *scope) {
	if c := sc.syncHookCondition; c != nil {
		setConditionStatus(sc.vrg, &sc.vrg.Status.Conditions, c.Type, c.Status, c.Reason, c.Message)
	}
}
