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
// satisfies it, and the writes made after its copy stay behind. The final sync therefore uses
// two triggers derived from the group's spec.finalSyncRequest R:
//
//  1. drain (R-drain): set together with spec.sourcePVC (the PVC, or the DR-owned PVC bound to
//     a deleted PVC's retained PV) and the schedule removed. The agent sets it only once the
//     workload stopped and new consumers are fenced. lastManualSync = R-drain proves that the
//     sync running when it was set (if any) has completed, and that no sync runs now: the
//     sources wait, as lastManualSync equals the trigger.
//  2. final (R-final): set once lastManualSync = R-drain while sourcePVC is the PVC. The sync
//     it starts starts after the trigger changed, so after the workload stopped; it reads
//     sourcePVC as it is then. lastManualSync = R-final with sourcePVC still the PVC proves
//     that sync completed: done.
//
// Every pass recomputes the step from the source's spec and status (finalSyncStep), so an
// agent restart anywhere is safe, and a stale read only repeats a step: seeing the schedule
// where R-drain or R-final is set asks for R-drain again, and any sync completing from then on
// started after the workload stopped (the first completion with R-drain came after the stop),
// so R-final is still only recorded by such a sync. lastManualSync can equal R-drain or R-final
// only after drover set them, as R is unique to one relocation (its start time). A sourcePVC
// changed by the DR-owned PVC's hand-over starts again from R-drain.

// FinalSyncTriggers are the two manual triggers of the final sync asked by request: drain ends
// the sync that may have begun before the workload stopped, final is a sync that began after.
func FinalSyncTriggers(request string) (drain, final string) {
	return request + "-drain", request + "-final"
}

// finalSyncStep says, from a source's spec and status, the spec.trigger.manual it must carry
// for the final sync of pvc asked by request, and whether that final sync is done.
func finalSyncStep(rs *volsyncv1alpha1.ReplicationSource, pvc, request string) (manual string, done bool) {
	drain, final := FinalSyncTriggers(request)
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
	case current == final:
		return final, last == final
	case current == drain && last == drain:
		return final, false
	default:
		return drain, false
	}
}

// FinalSync runs the final sync of pc.PVC with the two triggers above (a DR-owned PVC carries
// the final sync of the PVC named by AnnotationFinalSyncOf, through that PVC's source). Done
// once the source reports lastManualSync equal to the final trigger with sourcePVC the PVC:
// a sync that started after the workload stopped completed, and VolSync records a sync only
// after the destination confirmed it. The agent calls it only once nothing uses the PVC and new
// consumers are fenced; it must be idempotent, and is: each pass recomputes its step.
func (b *Backend) FinalSync(ctx context.Context, pc *replication.PVCContext) replication.Result {
	request := pc.VRG.Spec.FinalSyncRequest
	if request == "" {
		return replication.Done()
	}
	drain, _ := FinalSyncTriggers(request)
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
	if !ownedBy(rs, pc.VRG) {
		return replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf("ReplicationSource %s does not belong to this group", key))
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
	step := "1 of 2, ending any sync that began before the workload stopped"
	if manual != drain {
		step = "2 of 2, a sync that began after the workload stopped"
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
