package storage

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// The VolumeReplication conditions as the csi-addons controller sets them
// (internal/controller/replication.storage/status.go at d4d7fea4): the same condition types,
// the same reasons, set together in the same combinations. The messages are the lab's.

// setPromotedConditions: the image is primary (csi-addons' setPromotedCondition). A forced
// promotion reports the same reason; only its message says it was forced.
func setPromotedConditions(vr *replicationv1alpha1.VolumeReplication, st ImageState) {
	msg := "volume is promoted to primary and replicating to secondary"
	if st.Operation == opForcePromoted {
		msg = "volume is promoted to primary: the promotion was refused (FailedPrecondition: the peer's image was not a demoted, synced secondary) and retried with force"
	}
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, ReasonPromoted, msg)
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonHealthy, "volume is healthy")
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
	if st.OperationTime != nil {
		vr.Status.LastCompletionTime = &metav1.Time{Time: *st.OperationTime}
	}
}

// setReplicatingCondition is a primary's Replicating condition, from what the storage can tell
// of its mirroring: True while it mirrors, Unknown when it cannot report a last sync.
func setReplicatingCondition(vr *replicationv1alpha1.VolumeReplication, status metav1.ConditionStatus, msg string) {
	setVRCondition(vr, replicationv1alpha1.ConditionReplicating, status, ReasonReplicating, "volume "+msg)
}

// setDemotedConditions: the image is secondary. Completed True (Demoted) at once; Degraded True
// (VolumeDegraded) until the peer holds every write, with Resyncing True (ResyncTriggered) while
// a resync runs; then Degraded False (Healthy) and Resyncing False (NotResyncing). A secondary
// has no Replicating condition (csi-addons removes it).
func setDemotedConditions(vr *replicationv1alpha1.VolumeReplication, st ImageState) {
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, ReasonDemoted, "volume is demoted to secondary")
	apimeta.RemoveStatusCondition(&vr.Status.Conditions, replicationv1alpha1.ConditionReplicating)
	if st.OperationTime != nil {
		vr.Status.LastCompletionTime = &metav1.Time{Time: *st.OperationTime}
	}
	switch {
	case st.NeedsResync:
		msg := "volume is degraded: it diverged from the peer's primary (split-brain); set replicationState to resync or autoResync to discard its local changes"
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonVolumeDegraded, msg)
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, msg)
	case st.FinalMirrorPending:
		msg := "volume is degraded: the writes made as primary have not reached the peer yet (it is unreachable or not a secondary); they are sent when it can take them"
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonVolumeDegraded, msg)
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionTrue, ReasonResyncTriggered, msg)
	case st.LastSyncTime == nil:
		msg := "volume is resyncing changes from primary to secondary: waiting for the first mirror from the primary"
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonVolumeDegraded, msg)
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionTrue, ReasonResyncTriggered, msg)
	default:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonHealthy, "volume is demoted to secondary")
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
	}
}

// setFailedCondition: the asked operation cannot be served (csi-addons' setFailedPromotionCondition
// and setFailedDemotionCondition): Completed False, Degraded True (Error).
func setFailedCondition(vr *replicationv1alpha1.VolumeReplication, msg string) {
	reason := ReasonFailedToDemote
	if vr.Spec.ReplicationState == replicationv1alpha1.Primary {
		reason = ReasonFailedToPromote
	}
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionFalse, reason, msg)
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonError, msg)
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
}

func setVRCondition(vr *replicationv1alpha1.VolumeReplication, condType string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&vr.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: vr.Generation,
	})
}
