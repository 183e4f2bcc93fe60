package drpc

import (
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// recordTransitions records an event for each change of this reconcile that a person follows
// with `kubectl describe drpc`: the phase (those no action event tells), the step, a refusal
// of the action or of the spec, and PeerReady or Protected turning; a refusal also counts in
// the metrics. Events only on transitions: a status that did not change records nothing.
func (r *Reconciler) recordTransitions(sc *scope) {
	before, after := &sc.before.Status, &sc.drpc.Status
	switch {
	case after.Phase != before.Phase && !actionPhase(after.Phase):
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventPhaseChanged, "Phase %s, step %s (was %s)",
			after.Phase, dash(after.Progression), dash(string(before.Phase)))
	case after.Phase == before.Phase && after.Progression != before.Progression && after.Progression != "":
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventProgressionChanged, "%s: step %s (was %s)",
			after.Phase, after.Progression, dash(before.Progression))
	}
	if c, changed := turnedFalse(before.Conditions, after.Conditions, v1alpha1.ConditionValidated); changed {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventValidationFailed, "%s: %s", c.Reason, c.Message)
	}
	if c, changed := turnedFalse(before.Conditions, after.Conditions, v1alpha1.ConditionActionAccepted); changed {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventActionRefused, "%s: %s", c.Reason, c.Message)
		if c.Reason != v1alpha1.ReasonActionInProgress {
			r.Metrics.actionEnded(sc.drpc.Spec.Action, ResultRefused, 0)
		}
	}
	r.recordTurn(sc, v1alpha1.ConditionPeerReady, v1alpha1.EventPeerReady, v1alpha1.EventPeerNotReady)
	if c, changed := turnedReason(before.Conditions, after.Conditions, v1alpha1.ConditionPeerReady, v1alpha1.ReasonUntrustedPeerStatus); changed {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventUntrustedPeerStatus, "%s", c.Message)
	}
	r.recordTurn(sc, v1alpha1.ConditionProtected, v1alpha1.EventProtected, v1alpha1.EventProtectionLost)
	r.recordHookRuns(sc)
}

// recordTurn records onTrue when the condition turned True, onOther when it stopped being
// True (a warning, except during an action, where it is expected).
func (r *Reconciler) recordTurn(sc *scope, condType, onTrue, onOther string) {
	was := apimeta.IsStatusConditionTrue(sc.before.Status.Conditions, condType)
	c := apimeta.FindStatusCondition(sc.drpc.Status.Conditions, condType)
	switch {
	case c == nil:
	case c.Status == metav1.ConditionTrue && !was:
		r.event(sc, corev1.EventTypeNormal, onTrue, "%s", c.Message)
	case c.Status != metav1.ConditionTrue && was:
		eventType := corev1.EventTypeWarning
		if c.Reason == v1alpha1.ReasonActionInProgress {
			eventType = corev1.EventTypeNormal
		}
		r.event(sc, eventType, onOther, "%s %s (%s): %s", condType, c.Status, c.Reason, c.Message)
	}
}

// turnedFalse returns the condition when it is False now and was not, or was False for another
// reason.
func turnedFalse(before, after []metav1.Condition, condType string) (*metav1.Condition, bool) {
	c := apimeta.FindStatusCondition(after, condType)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil, false
	}
	old := apimeta.FindStatusCondition(before, condType)
	return c, old == nil || old.Status != metav1.ConditionFalse || old.Reason != c.Reason
}

// actionPhase says whether an action's own events (begin, complete) tell the entry into the
// phase.
func actionPhase(phase v1alpha1.DRPCPhase) bool {
	switch phase {
	case v1alpha1.PhaseFailingOver, v1alpha1.PhaseFailedOver, v1alpha1.PhaseRelocating, v1alpha1.PhaseRelocated:
		return true
	}
	return false
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// turnedReason returns the condition when it has the reason now and did not before.
func turnedReason(before, after []metav1.Condition, condType, reason string) (*metav1.Condition, bool) {
	c := apimeta.FindStatusCondition(after, condType)
	if c == nil || c.Reason != reason {
		return nil, false
	}
	b := apimeta.FindStatusCondition(before, condType)
	return c, b == nil || b.Reason != reason
}
