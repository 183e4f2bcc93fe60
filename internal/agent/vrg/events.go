package vrg

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// event records an event on the group.
func (r *Reconciler) event(sc *scope, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(sc.vrg, nil, eventType, reason, reason, note, args...)
	}
}

// recordTransitions records an event for each transition the status patch of this pass wrote,
// for both backends alike: promotion and demotion (the state), the restore's adoptions and
// conflicts (ClusterDataReady), a stale primary found through the stores (ClusterDataProtected)
// and a relocation's final sync. The fence is told where it changes (fence.go).
func (r *Reconciler) recordTransitions(sc *scope) {
	before, after := &sc.before.Status, &sc.vrg.Status
	if after.State != before.State {
		switch after.State {
		case v1alpha1.StatePrimary:
			if sc.vrg.Spec.Action != v1alpha1.ActionNone {
				r.event(sc, corev1.EventTypeNormal, v1alpha1.EventPromoted, "Primary after %s: %d PVCs replicate from this cluster",
					sc.vrg.Spec.Action, len(after.ProtectedPVCs))
			} else {
				r.event(sc, corev1.EventTypeNormal, v1alpha1.EventProtected, "Primary: %d PVCs replicate from this cluster", len(after.ProtectedPVCs))
			}
		case v1alpha1.StateSecondary:
			// A new group that starts secondary is not a demotion.
			if sc.vrg.Spec.Action != v1alpha1.ActionNone {
				r.event(sc, corev1.EventTypeNormal, v1alpha1.EventDemoted, "Secondary after %s: this cluster receives the peer's replication",
					sc.vrg.Spec.Action)
			}
		}
	}
	if c, ok := turned(before.Conditions, after.Conditions, v1alpha1.ConditionClusterDataReady, metav1.ConditionTrue); ok &&
		sc.restore != nil && len(sc.restore.leftovers) > 0 {
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventPVCAdopted, "Adopted what an earlier failover left here, as it matches the stored metadata: %s (%s)",
			strings.Join(sc.restore.leftovers, ", "), c.Message)
	}
	if c, ok := turned(before.Conditions, after.Conditions, v1alpha1.ConditionClusterDataReady, metav1.ConditionFalse); ok &&
		(c.Reason == v1alpha1.ReasonPVCConflict || c.Reason == v1alpha1.ReasonPVConflict) {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventPVCConflict, "%s: %s", c.Reason, c.Message)
	}
	if c, ok := turned(before.Conditions, after.Conditions, v1alpha1.ConditionClusterDataProtected, metav1.ConditionFalse); ok &&
		c.Reason == v1alpha1.ReasonStalePrimary {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventStalePrimary, "%s", c.Message)
	}
	if fs := after.FinalSync; fs != nil && (before.FinalSync == nil || before.FinalSync.Request != fs.Request) {
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventFinalSyncCompleted, "Final sync %s completed: the peer holds every write", fs.Request)
	}
}

// turned returns the condition when it has the status now and did not before, or had it for
// another reason.
func turned(before, after []metav1.Condition, condType string, status metav1.ConditionStatus) (*metav1.Condition, bool) {
	c := apimeta.FindStatusCondition(after, condType)
	if c == nil || c.Status != status {
		return nil, false
	}
	old := apimeta.FindStatusCondition(before, condType)
	return c, old == nil || old.Status != status || old.Reason != c.Reason
}
