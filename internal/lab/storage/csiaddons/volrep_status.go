package csiaddons

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// The VolumeReplication conditions as the csi-addons controller sets them
// (internal/controller/replication.storage/status.go at d4d7fea4): the same condition types,
// the same reasons, set together in the same combinations. The messages are the lab's.

// setPromotedConditions: the image is primary (csi-addons' setPromotedCondition). A forced
// promotion reports the same reason; only its message says it was forced.
func setPromotedConditions(vr *replicationv1alpha1.VolumeReplication, st state.ImageState) {
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

// setDemotedConditions: csi-addons' first reconcile of a demotion (setDemotedCondition):
// Completed True (Demoted), Degraded True (VolumeDegraded), Resyncing False (NotResyncing).
func setDemotedConditions(vr *replicationv1alpha1.VolumeReplication) {
	msg := "volume is marked secondary and is degraded: the storage is asked whether it is in sync at the next check"
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, ReasonDemoted, "volume is demoted to secondary")
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonVolumeDegraded, msg)
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
}

// setResyncingConditions: the resync was asked and ceph-csi says it is not ready
// (setResyncCondition): Completed True (Demoted), Degraded True (VolumeDegraded), Resyncing True
// (ResyncTriggered). A secondary of a live primary stays so.
func setResyncingConditions(vr *replicationv1alpha1.VolumeReplication, msg string) {
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, ReasonDemoted, "volume is demoted to secondary")
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonVolumeDegraded, "volume is degraded: "+msg)
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionTrue, ReasonResyncTriggered, "volume is resyncing: "+msg)
}

// setInSyncConditions: ceph-csi says the resync is ready (setResyncCondition, then
// setNotDegradedCondition): Completed True (Demoted), Degraded False (Healthy), Resyncing False
// (NotResyncing).
func setInSyncConditions(vr *replicationv1alpha1.VolumeReplication) {
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, ReasonDemoted, "volume is demoted to secondary")
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonHealthy, "volume is demoted to secondary and in sync with its peer")
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
}

// setFailedResyncConditions: ceph-csi's resync failed (setFailedResyncCondition): Completed False
// (FailedToResync), Degraded True (Error), Resyncing False (FailedToResync).
func setFailedResyncConditions(vr *replicationv1alpha1.VolumeReplication, msg string) {
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionFalse, ReasonFailedToResync, "failed to resync volume")
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonError, "volume failed to resync: "+msg)
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonFailedToResync, "volume is not resyncing: "+msg)
}

// setFailedCondition: the asked operation cannot be served (csi-addons' setFailedPromotionCondition
// and setFailedDemotionCondition): Completed False with completedMsg, Degraded True (Error) with
// degradedMsg, which csi-addons ends with the driver's error.
func setFailedCondition(vr *replicationv1alpha1.VolumeReplication, completedMsg, degradedMsg string) {
	reason := ReasonFailedToDemote
	if vr.Spec.ReplicationState == replicationv1alpha1.Primary {
		reason = ReasonFailedToPromote
	}
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, metav1.ConditionFalse, reason, completedMsg)
	setVRCondition(vr, replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonError, degradedMsg)
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, ReasonNotResyncing, "volume is not resyncing")
}

func setVRCondition(vr *replicationv1alpha1.VolumeReplication, condType string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&vr.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: vr.Generation,
	})
}
