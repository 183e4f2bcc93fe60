package volsync

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// The final sync of a relocation must carry every write the workload made before it stopped,
// so it must be a sync that STARTED after the workload stopped and its PVCs were free. VolSync
// does not say when the sync that satisfies a manual trigger started. Its state machine
// (backube/volsync internal/controller/statemachine/machine.go) runs one sync at a time and:
//
//   - never interrupts a running sync; when any sync completes it copies spec.trigger.manual,
//     as it is at that moment, into status.lastManualSync (transitionToCleaningUp);
//   - starts a new sync with a manual trigger only when spec.trigger.manual differs from
//     status.lastManualSync (shouldSync), and none while they are equal.
//
// So one manual trigger is not enough: a sync that began before the workload stopped (from a
// schedule, continuously, or an earlier trigger) completes after the trigger is set and
// satisfies it, and the writes made after its copy stay behind.
//
// Nor is the source's completion of a sync proof that the destination has an image of it.
// Upstream's rsync-tls client (mover-rsync-tls/client.sh) sends its "complete" control file,
// sleeps and exits, and the ReplicationSource records the sync when that Job ends; the
// ReplicationDestination sets status.latestImage only after its own mover Job ended and the
// new snapshot is bound (rsynctls/mover.go, volumehandler.go), seconds to minutes later. A
// target promoted at the source's completion that reads latestImage then restores the image of
// the sync BEFORE the final one, silently losing every write since. What upstream does
// guarantee is order: each destination mover Job serves one sync and is created only after the
// clean-up of the previous one, which follows the recording of its image. So a sync that
// completes at the source after another completed there reached a destination mover that
// started after the earlier sync's image was recorded.
//
// The final sync therefore uses three triggers derived from the group's spec.finalSyncRequest R:
//
//  1. drain (R-drain): set together with spec.sourcePVC (the PVC, or the DR-owned PVC bound to
//     a deleted PVC's retained PV) and the schedule removed. The agent sets it only once the
//     workload stopped and new consumers are fenced. lastManualSync = R-drain proves that the
//     sync running when it was set (if any) has completed, and that no sync runs now: the
//     sources wait, as lastManualSync equals the trigger.
//  2. final (R-final): set once lastManualSync = R-drain while sourcePVC is the PVC. The sync
//     it starts starts after the trigger changed, so after the workload stopped; it reads
//     sourcePVC as it is then: it carries every write.
//  3. confirm (R-confirm): set once lastManualSync = R-final. The sync it starts starts after
//     the final sync completed at the source, so its data reached a destination mover created
//     after the final sync's image was recorded. lastManualSync = R-confirm with sourcePVC
//     still the PVC: done, and from then on the destination's status.latestImage, read from
//     the API server, is the image of the final sync or of this one, which holds the same
//     data (nothing writes in between). The hub promotes the target only after this.
//
// Every pass recomputes the step from the source's spec and status (finalSyncStep), so an
// agent restart anywhere is safe, and a stale read only repeats a step: seeing the schedule
// where a trigger of R is set asks for R-drain again, and any sync completing from then on
// started after the workload stopped (the first completion with R-drain came after the stop),
// so R-final is still only recorded by such a sync, and R-confirm only by a sync that started
// after one recorded R-final (a source runs one sync at a time). lastManualSync can equal a
// trigger of R only after drover set it, as R is unique to one relocation (its start time). A
// sourcePVC changed by the DR-owned PVC's hand-over starts again from R-drain.

// FinalSyncTriggers are the three manual triggers of the final sync asked by request: drain ends
// the sync that may have begun before the workload stopped, final is a sync that began after,
// confirm a sync whose arrival proves the destination recorded the final sync's image.
func FinalSyncTriggers(request string) (drain, final, confirm string) {
	return request + "-drain", request + "-final", request + "-confirm"
}

// finalSyncStep says, from a source's spec and status, the spec.trigger.manual it must carry
// for the final sync of pvc asked by request, and whether that final sync is done.
func finalSyncStep(rs *volsyncv1alpha1.ReplicationSource, pvc, request string) (manual string, done bool) {
	drain, final, confirm := FinalSyncTriggers(request)
	var current, last string
	if t := rs.Spec.Trigger; t != nil && t.Schedule == nil {
		current = t.Manual
	}
	if rs.Status != nil {
		last = rs.Status.LastManualSync
	}
	switch {
	case rs.Spec.SourcePVC != pvc:
		return drain, false
	case current == confirm:
		return confirm, last == confirm
	case current == final && last == final:
		return confirm, false
	case current == final:
		return final, false
	case current == drain && last == drain:
		return final, false
	default:
		return drain, false
	}
}

// FinalSync runs the final sync of pc.PVC with the three triggers above (a DR-owned PVC carries
// the final sync of the PVC named by AnnotationFinalSyncOf, through that PVC's source). Done
// once the source reports lastManualSync equal to the confirm trigger with sourcePVC the PVC:
// a sync that started after the workload stopped completed, and the destination recorded its
// image before the confirming sync could complete. The agent calls it only once nothing uses
// the PVC and new consumers are fenced; it must be idempotent, and is: each pass recomputes its
// step.
func (b *Backend) FinalSync(ctx context.Context, pc *replication.PVCContext) replication.Result {
	request := pc.VRG.Spec.FinalSyncRequest
	if request == "" {
		return replication.Done()
	}
	drain, final, confirm := FinalSyncTriggers(request)
	key := client.ObjectKey{Namespace: pc.PVC.Namespace, Name: sourceName(pc.PVC)}
	rs := &volsyncv1alpha1.ReplicationSource{}
	if err := b.client.Get(ctx, key, rs); err != nil {
		if dest := DestinationOf(pc.VRG, key.Namespace, key.Name); apierrors.IsNotFound(err) && dest != nil {
			// Removed behind the relocation's back (the PVC was released as deleted before
			// this agent saw the request): the destination is known, so the final sync gets a
			// source of its own, starting at the drain step.
			if _, res := b.ensureSource(ctx, pc, dest, &volsyncv1alpha1.TriggerSpec{Manual: drain}); res.Outcome != replication.OutcomeRetry && res.Outcome != replication.OutcomeDone {
				return res
			}
			return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf(
				"waiting for the final sync of PVC %s/%s (ReplicationSource %s recreated, trigger.manual %q)", pc.PVC.Namespace, pc.PVC.Name, key.Name, drain))
		}
		if apierrors.IsNotFound(err) {
			return replication.Failed(v1alpha1.ReasonVolSyncDestinationUnknown, fmt.Sprintf(
				"PVC %s has no ReplicationSource %s (it never had a VolSync destination), so its final sync cannot run: its writes exist only on this cluster; fail over instead, or give the primary its destination",
				pc.PVC.Name, key))
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get ReplicationSource %s: %v", key, err))
	}
	if !OwnedBy(rs, pc.VRG) {
		return replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf("ReplicationSource %s does not belong to this group", key))
	}
	// Every completion is recorded, so the final sync's becomes the recovery point once the
	// confirming sync completed.
	if res := b.recordSyncs(ctx, rs); !res.IsDone() {
		return res
	}
	manual, done := finalSyncStep(rs, pc.PVC.Name, request)
	if done {
		return replication.Done()
	}
	if t := rs.Spec.Trigger; rs.Spec.SourcePVC != pc.PVC.Name || t == nil || t.Manual != manual || t.Schedule != nil {
		before := rs.DeepCopy()
		rs.Spec.SourcePVC = pc.PVC.Name
		rs.Spec.Trigger = &volsyncv1alpha1.TriggerSpec{Manual: manual}
		if err := b.client.Patch(ctx, rs, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to ask ReplicationSource %s for the final sync: %v", key, err))
		}
	}
	step := "1 of 3, ending any sync that began before the workload stopped"
	switch manual {
	case final:
		step = "2 of 3, a sync that began after the workload stopped"
	case confirm:
		step = "3 of 3, one more sync, whose arrival proves the destination took the image of the final one"
	}
	msg := fmt.Sprintf("waiting for the final sync of PVC %s/%s (ReplicationSource %s, step %s: trigger.manual %q)",
		pc.PVC.Namespace, pc.PVC.Name, key.Name, step, manual)
	if e := syncError(rs.Status); e != "" {
		msg += ": " + e
	} else if mover := rs.Status; mover != nil && mover.LatestMoverStatus != nil && mover.LatestMoverStatus.Result == volsyncv1alpha1.MoverResultFailed {
		msg += ": its mover failed and VolSync retries it: " + logTail(mover.LatestMoverStatus.Logs)
	}
	return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, msg)
}
