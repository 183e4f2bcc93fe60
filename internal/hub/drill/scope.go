package drill

import (
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// scope is the state of one reconcile of one DRDrill. Nothing in it outlives the request.
type scope struct {
	drill  *v1alpha1.DRDrill
	before *v1alpha1.DRDrill
	now    time.Time

	// drpc is the drill's DRPlacementControl; nil when there is none.
	drpc *v1alpha1.DRPlacementControl
	// policy is the DRPlacementControl's DRPolicy; nil when it could not be read.
	policy *v1alpha1.DRPolicy
	// interval is the policy's schedulingInterval; zero when unknown.
	interval time.Duration
}

func newScope(drill *v1alpha1.DRDrill, now time.Time) *scope {
	return &scope{drill: drill, before: drill.DeepCopy(), now: now.Truncate(time.Second)}
}

// Defaults of the spec.
const (
	defaultTimeout      = 30 * time.Minute
	defaultHistoryLimit = 10
)

// timeout is spec.timeout or its default.
func (sc *scope) timeout() time.Duration {
	if t := sc.drill.Spec.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return defaultTimeout
}

// keepFor is spec.keepFor; zero tears the sandbox down at once.
func (sc *scope) keepFor() time.Duration {
	if k := sc.drill.Spec.KeepFor; k != nil && k.Duration > 0 {
		return k.Duration
	}
	return 0
}

// drillID is the drill's short identifier in sandbox names: the first 8 hexadecimal digits of
// the DRDrill's UID. It is derived, never stored, so a restarted hub names the same sandbox.
func drillID(d *v1alpha1.DRDrill) string {
	id := strings.ReplaceAll(strings.ToLower(string(d.UID)), "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	return id
}

// sandboxName is the DrillSandbox's name on the target cluster.
func sandboxName(d *v1alpha1.DRDrill) string { return "drill-" + drillID(d) }

// final reports whether a phase is final.
func final(p v1alpha1.DrillPhase) bool {
	switch p {
	case v1alpha1.DrillPassed, v1alpha1.DrillFailed, v1alpha1.DrillAborted, v1alpha1.DrillRefused:
		return true
	}
	return false
}

// running reports whether a drill holds (or may hold) a sandbox: accepted and not final.
func running(p v1alpha1.DrillPhase) bool {
	return p == v1alpha1.DrillRunning || p == v1alpha1.DrillTearingDown
}

// setAccepted sets the Accepted condition, stamped with the generation.
func (sc *scope) setAccepted(status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&sc.drill.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionDrillAccepted, Status: status, Reason: reason, Message: message,
		ObservedGeneration: sc.drill.Generation,
	})
}

// accepted returns the Accepted condition; nil before the hub decided.
func (sc *scope) accepted() *metav1.Condition {
	return apimeta.FindStatusCondition(sc.drill.Status.Conditions, v1alpha1.ConditionDrillAccepted)
}

// aborted reports whether the drill was aborted (an action overtook it or its DRPC went away).
func (sc *scope) aborted() bool {
	c := sc.accepted()
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == v1alpha1.ReasonActionOvertook || c.Reason == v1alpha1.ReasonDRPCNotFound)
}

// step returns the drill's step of that name; nil when there is none.
func (sc *scope) step(name string) *v1alpha1.DrillStep {
	for i := range sc.drill.Status.Steps {
		if sc.drill.Status.Steps[i].Name == name {
			return &sc.drill.Status.Steps[i]
		}
	}
	return nil
}

// maxSteps is the API's bound on status.steps.
const maxSteps = 32

// putStep replaces the step of the same name, or appends it (within the API's bound).
func (sc *scope) putStep(s v1alpha1.DrillStep) {
	if old := sc.step(s.Name); old != nil {
		*old = s
		return
	}
	if len(sc.drill.Status.Steps) < maxSteps {
		sc.drill.Status.Steps = append(sc.drill.Status.Steps, s)
	}
}

// startStep appends a running step started now, unless it exists.
func (sc *scope) startStep(name, message string) {
	if sc.step(name) == nil {
		t := metav1.NewTime(sc.now)
		sc.putStep(v1alpha1.DrillStep{Name: name, Started: &t, Message: message})
	}
}

// finishStep ends a running step now with a result; a missing or finished step is left.
func (sc *scope) finishStep(name string, result v1alpha1.DrillResult, message string) {
	s := sc.step(name)
	if s == nil || s.Finished != nil {
		return
	}
	t := metav1.NewTime(sc.now)
	s.Finished, s.Result = &t, result
	if message != "" {
		s.Message = message
	}
}

// The hub's own steps; the agent's come between Accepted and Kept.
const (
	stepAccepted    = "Accepted"
	stepKept        = "Kept"
	stepTearingDown = "TearingDown"
)
