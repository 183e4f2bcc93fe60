package drpc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/termination"
)

// How the hooks' runs reach a person (docs/decisions/0011-application-hooks.md): the agents
// record each run in their group's status.hooks, stamped with the recipe's action; the hub
// copies the runs of the action in force into the DRPlacementControl's status.hooks with the
// cluster they ran on (hookRuns), turns Available or PeerReady False while one runs or after one
// failed (hookConditions), and records an event and counts a metric per result
// (recordHookRuns). A person answers a failed run with spec.hookDecision, which the hub hands
// only to the group where that attempt failed (observeHookDecision).

// ProgressionHookFailed is the step of an action that stands at a hook that failed with
// onError Fail, until a person retries or continues it.
const ProgressionHookFailed Progression = "HookFailed"

// maxDRPCHooks is how many runs the DRPlacementControl's status.hooks holds.
const maxDRPCHooks = 64

// observeHookDecision decides which groups spec.hookDecision is handed to: the group whose
// status.hooks shows the named hook Failed at the named attempt of the action in force, and a
// group that already carries it for that action (the agent may have acted on it: its run is
// then no longer Failed, and the decision stays until the action ends). A decision that
// answers no such run is handed to none, and decisionIgnored says why: a stale --continue must
// never pass over a later failure.
func (sc *scope) observeHookDecision() {
	sc.decisionTo, sc.decisionIgnored = map[string]bool{}, ""
	d := sc.drpc.Spec.HookDecision
	if d == nil {
		return
	}
	key := actionKey(&sc.drpc.Status)
	sc.decisionKey = key
	var failed []string
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		if !cv.reachable() || cv.vrg == nil {
			continue
		}
		if r := cv.vrg.Spec.Recipe; r != nil && r.Action == key {
			for _, have := range r.Decisions {
				if have == *d {
					sc.decisionTo[name] = true
				}
			}
		}
		for _, run := range cv.vrg.Status.Hooks {
			if run.Action != key || run.Result != v1alpha1.HookFailed {
				continue
			}
			if run.Name == d.Hook && run.Attempt == d.Attempt {
				sc.decisionTo[name] = true
			}
			failed = append(failed, fmt.Sprintf("hook %s attempt %d on %s", run.Name, run.Attempt, name))
		}
	}
	if len(sc.decisionTo) > 0 {
		return
	}
	now := "no hook has failed in the action in force"
	if len(failed) > 0 {
		now = "what failed is " + strings.Join(failed, ", ")
	}
	sc.decisionIgnored = fmt.Sprintf("spec.hookDecision (%s of hook %s, attempt %d) answers no failed run, so it is handed to no cluster: %s; "+
		"answer a failed run with drover failover (or relocate) APP --retry or --continue", d.Decision, d.Hook, d.Attempt, now)
}

// hookRuns are the DRPlacementControl's status.hooks: each group's runs of the action in force
// with the cluster set; a cluster that did not answer keeps the runs last seen there.
func hookRuns(sc *scope) []v1alpha1.HookRun {
	key := actionKey(&sc.drpc.Status)
	var out []v1alpha1.HookRun
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		if !cv.reachable() {
			for _, run := range sc.drpc.Status.Hooks {
				if run.Cluster == name && run.Action == key {
					out = append(out, *run.DeepCopy())
				}
			}
			continue
		}
		if cv.vrg == nil {
			continue
		}
		for _, run := range cv.vrg.Status.Hooks {
			if run.Action != key {
				continue
			}
			run := *run.DeepCopy()
			run.Cluster = name
			out = append(out, run)
		}
	}
	if len(out) > maxDRPCHooks {
		out = out[:maxDRPCHooks]
	}
	return out
}

// sourceSide reports whether a hook's point runs where the application runs before it moves:
// its failure holds up the copy to the peer (PeerReady); the others hold up the application on
// its target (Available).
func sourceSide(p v1alpha1.HookPoint) bool {
	return p == v1alpha1.HookBeforeSync || p == v1alpha1.HookBeforeStop
}

// stopHooksPassed reports whether a relocation's source has run every hook its recipe asks for
// before the application stops (BeforeSync, then BeforeStop) for this action: each has a run
// that Succeeded, Continued or was PassedOver. A group with no recipe, or a recipe with no such
// hook, has passed them. Until then the hub does not stop the application by its placement:
// the source's agent holds its own stop, and a GitOps tool must not stop it either while a
// hook drains its clients or flushes it (docs/decisions/0011-application-hooks.md).
func stopHooksPassed(vrg *v1alpha1.VolumeReplicationGroup) bool {
	rc := vrg.Spec.Recipe
	if rc == nil {
		return true
	}
	for _, h := range rc.Spec.Hooks {
		if !sourceSide(h.Point) {
			continue
		}
		i := slices.IndexFunc(vrg.Status.Hooks, func(run v1alpha1.HookRun) bool {
			return run.Name == h.Name && run.Action == rc.Action
		})
		if i < 0 {
			return false
		}
		switch vrg.Status.Hooks[i].Result {
		case v1alpha1.HookSucceeded, v1alpha1.HookContinued, v1alpha1.HookPassedOver:
		default:
			return false
		}
	}
	return true
}

// hookConditions turns the conditions that a hook holds up False: a failed run (the action
// stands at it: progression HookFailed, Available False, and PeerReady False too for a
// source-side hook) before a running one (Available False during an action, or while a
// target-side hook runs after it). A BeforeSync hook that runs is routine and changes nothing.
func hookConditions(sc *scope) {
	st := &sc.drpc.Status
	action := inActionPhase(st.Phase)
	for i := range st.Hooks {
		run := &st.Hooks[i]
		if run.Result != v1alpha1.HookFailed {
			continue
		}
		msg := failedMessage(sc, run)
		if action {
			st.Progression = string(ProgressionHookFailed)
		}
		if action || !sourceSide(run.Point) {
			sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHookFailed, msg)
		}
		if sourceSide(run.Point) {
			sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonHookFailed, msg)
		}
		return
	}
	for i := range st.Hooks {
		run := &st.Hooks[i]
		if run.Result != v1alpha1.HookRunning || (!action && sourceSide(run.Point)) {
			continue
		}
		// The start, not the time it has run: a message that changed at every pass would
		// rewrite the status at every pass.
		since := ""
		if run.StartTime != nil {
			since = " since " + run.StartTime.UTC().Format(time.RFC3339)
		}
		sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHookRunning,
			fmt.Sprintf("waiting for hook %s (%s) on %s, attempt %d, running%s", run.Name, run.Point, run.Cluster, run.Attempt, since))
		return
	}
}

// failedMessage says which hook failed where, how, with the end of its output, and what to do.
func failedMessage(sc *scope, run *v1alpha1.HookRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hook %s (%s) failed on %s at attempt %d", run.Name, run.Point, run.Cluster, run.Attempt)
	if run.ExitCode != nil {
		fmt.Fprintf(&b, " with exit code %d", *run.ExitCode)
	}
	if run.Message != "" {
		fmt.Fprintf(&b, ": %s", run.Message)
	}
	if run.Output != "" {
		fmt.Fprintf(&b, "; output: %s", strings.TrimSpace(run.Output))
	}
	verb := "failover"
	if actionOfPhase(sc.drpc.Status.Phase) == v1alpha1.ActionRelocate {
		verb = "relocate"
	}
	fmt.Fprintf(&b, "; fix the cause, then run drover %s %s -n %s --retry to run it again, or --continue to go on past it", verb, sc.drpc.Name, sc.drpc.Namespace)
	if sc.decisionIgnored != "" {
		fmt.Fprintf(&b, " (%s)", sc.decisionIgnored)
	}
	return b.String()
}

// recordHookRuns records an event and counts the metric for each run that ended since the
// status last written (a run, by cluster, hook, action and attempt, not there before with its
// result), and a warning when a new spec.hookDecision is handed to no cluster.
func (r *Reconciler) recordHookRuns(sc *scope) {
	type runKey struct {
		cluster, name, action string
		attempt               int32
	}
	before := map[runKey]v1alpha1.HookResult{}
	for _, run := range sc.before.Status.Hooks {
		before[runKey{run.Cluster, run.Name, run.Action, run.Attempt}] = run.Result
	}
	for _, run := range sc.drpc.Status.Hooks {
		if run.Result == v1alpha1.HookRunning || before[runKey{run.Cluster, run.Name, run.Action, run.Attempt}] == run.Result {
			continue
		}
		r.Metrics.hookEnded(run.Result)
		eventType, reason := corev1.EventTypeNormal, v1alpha1.EventHookSucceeded
		switch run.Result {
		case v1alpha1.HookFailed:
			eventType, reason = corev1.EventTypeWarning, v1alpha1.EventHookFailed
		case v1alpha1.HookContinued:
			eventType, reason = corev1.EventTypeWarning, v1alpha1.EventHookContinued
		case v1alpha1.HookPassedOver:
			reason = v1alpha1.EventHookPassedOver
		}
		note := fmt.Sprintf("Hook %s (%s) on %s, attempt %d: %s", run.Name, run.Point, run.Cluster, run.Attempt, run.Result)
		if run.ExitCode != nil {
			note += fmt.Sprintf(", exit code %d", *run.ExitCode)
		}
		if run.Result != v1alpha1.HookSucceeded && run.Output != "" {
			note += ": " + termination.Tail(strings.TrimSpace(run.Output), 512)
		}
		r.event(sc, eventType, reason, "%s", note)
	}
	if sc.decisionIgnored != "" && sc.drpc.Generation != sc.before.Status.ObservedGeneration {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventHookDecisionIgnored, "%s", sc.decisionIgnored)
	}
}
