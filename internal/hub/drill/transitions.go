package drill

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
)

// recordTransition records the event of a phase the drill entered, once its status is written.
func (r *Reconciler) recordTransition(sc *scope) {
	st := &sc.drill.Status
	if st.Phase == sc.before.Status.Phase {
		return
	}
	msg := ""
	if c := sc.accepted(); c != nil {
		msg = c.Message
	}
	switch st.Phase {
	case v1alpha1.DrillRefused:
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventDrillRefused, "%s", msg)
	case v1alpha1.DrillRunning:
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventDrillStarted, "%s", msg)
	case v1alpha1.DrillTearingDown:
		if sc.aborted() {
			r.event(sc, corev1.EventTypeWarning, v1alpha1.EventDrillAborted, "%s", msg)
		}
	case v1alpha1.DrillPassed:
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventDrillPassed, "the %s drill on %s passed and was torn down: RTO %s, RPO %s",
			orNone(string(st.Mode)), st.TargetCluster, seconds(st.RTOSeconds), seconds(st.RPOSeconds))
	case v1alpha1.DrillFailed:
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventDrillFailed, "the drill on %s failed and was torn down: %s",
			st.TargetCluster, failure(sc))
	}
}

// seconds tells an optional number of seconds.
func seconds(s *int64) string {
	if s == nil {
		return "not measured"
	}
	return fmt.Sprintf("%ds", *s)
}

// failure says why a drill failed: the timeout, the check, or the sandbox's last failed step.
func failure(sc *scope) string {
	st := &sc.drill.Status
	if c := sc.accepted(); c != nil && c.Reason == v1alpha1.ReasonDrillTimedOut {
		return c.Message
	}
	if st.Check != nil && st.Check.Result == v1alpha1.DrillResultFailed {
		return "the check failed: " + st.Check.Message
	}
	for i := len(st.Steps) - 1; i >= 0; i-- {
		if st.Steps[i].Result == v1alpha1.DrillResultFailed {
			return st.Steps[i].Name + ": " + st.Steps[i].Message
		}
	}
	return "the sandbox reported Failed; look at the DrillSandbox's status on " + st.TargetCluster
}

// reconcileDelete tears down the sandbox of a drill deleted before it was final, then lets the
// drill go.
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !containsFinalizer(sc.drill) {
		return ctrl.Result{}, nil
	}
	if !final(sc.drill.Status.Phase) {
		if gone, res := r.deleteSandbox(ctx, sc); !gone {
			return res, nil
		}
	}
	return ctrl.Result{}, r.patchFinalizer(ctx, sc.drill, false)
}
