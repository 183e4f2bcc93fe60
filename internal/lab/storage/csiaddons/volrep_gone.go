package csiaddons

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// A VolumeReplication whose image is gone: rbd-mirror deleted a non-primary image whose
// primary's mirroring was disabled (deleteIfUnmirrored). csi-addons keeps calling the driver at
// every reconcile, and ceph-csi answers gRPC NotFound for every call on a missing image
// (ceph/ceph-csi internal/csi-addons/rbd/replication.go: DemoteVolume, EnableVolumeReplication
// and ResyncVolume map the manager's "volume ... not found: image not found" through
// getGRPCError, GetVolumeReplicationInfo directly). What csi-addons then writes
// (csi-addons/kubernetes-csi-addons d4d7fea4,
// internal/controller/replication.storage/volumereplication_controller.go, Reconcile,
// markVolumeAsSecondary, enableReplication, resyncVolume, getVolumeReplicationInfo; status.go):
//
//   - secondary: Demote is called at every reconcile, demoted before or not. Completed False
//     (FailedToDemote), Degraded True (Error) whose message ends with the driver's error as
//     gRPC prints it, "rpc error: code = NotFound desc = ...", Resyncing False (NotResyncing).
//     status.state stays what it was (GetCurrentReplicationState): Secondary when the demotion
//     was reported before the image went, Primary when the image went first (the demotion's
//     status write failed, volrep_lostreport.go); status.message is the error's description.
//   - resync: FailedToResync likewise.
//   - primary, not reported primary yet: enabling replication fails, FailedToPromote likewise.
//   - primary, reported primary: GetVolumeReplicationInfo's NotFound is a known error,
//     taken as "no information": nothing changes.
//
// csi-addons retries with its backoff (a secondary every 15 s); the lab every volRepWaitRetry.

// goneDescription is ceph-csi's description of the NotFound for a missing image.
func goneDescription(handle string) string {
	return fmt.Sprintf("volume %s not found: image not found (rbd-mirror deleted it when its primary's mirroring was disabled)", handle)
}

// reportImageGone is csi-addons' reconcile of a VolumeReplication whose image is gone.
func reportImageGone(sc *volRepScope) (ctrl.Result, error) {
	vr := sc.vr
	sc.report, sc.requeueReport = true, volRepWaitRetry
	desc := sc.img.notFound()
	grpcErr := "rpc error: code = NotFound desc = " + desc
	switch vr.Spec.ReplicationState {
	case replicationv1alpha1.Secondary:
		setFailedCondition(vr, "failed to demote volume", "volume failed to demote: "+grpcErr)
	case replicationv1alpha1.Resync:
		setFailedResyncConditions(vr, grpcErr)
	case replicationv1alpha1.Primary:
		if vr.Status.State == replicationv1alpha1.PrimaryState {
			return ctrl.Result{RequeueAfter: volRepWaitRetry}, nil
		}
		setFailedCondition(vr, "failed to enable volume replication", "volume failed to promote: "+grpcErr)
	}
	if vr.Status.State == "" {
		vr.Status.State = replicationv1alpha1.UnknownState
	}
	vr.Status.Message = desc
	return ctrl.Result{RequeueAfter: volRepWaitRetry}, nil
}
