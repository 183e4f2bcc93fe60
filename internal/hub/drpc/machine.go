package drpc

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The DRPlacementControl's lifecycle is a state machine. The state is status.phase (with
// status.actionTarget and status.actionStartTime for an action in progress); each state is one
// function that observes the clusters, asks for what the step needs and moves to the next
// state when its step is done. Every function is idempotent: a hub restarted at any point
// observes the same groups and continues. The progression is the step a person sees.
//
//	""/Deploying ──► Deployed ──(Failover)──► FailingOver ──► FailedOver
//	                    │                          ▲                │
//	                    └──(Relocate)──► Relocating ┘(a failover     └─(Relocate)─► Relocating ──► Relocated
//	                                                  overtakes a stuck relocation)
//
// Deployed, FailedOver and Relocated are settled: the application runs on currentPrimary and
// the hub keeps its peer's group secondary (demoting a returning old primary first thing).

// Progression is a step of a phase.
type Progression string

// The steps.
const (
	ProgressionCreatingGroups   Progression = "CreatingGroups"
	ProgressionWaitingForGroup  Progression = "WaitingForPrimary"
	ProgressionWaitingForTarget Progression = "WaitingForTargetCluster"
	ProgressionPromotingTarget  Progression = "PromotingTarget"
	ProgressionDemotingSource   Progression = "DemotingSourceCluster"
	ProgressionStoppingApp      Progression = "StoppingApplication"
	ProgressionFinalSync        Progression = "DemotingForFinalSync"
	ProgressionWaitingForSource Progression = "WaitingForSourceCluster"
	ProgressionPlacingApp       Progression = "PlacingApplication"
	ProgressionCleaningUp       Progression = "DemotingOldPrimary"
	ProgressionWaitingForPeer   Progression = "WaitingForPeer"
	ProgressionWaitingForApp    Progression = "WaitingForApplication"
	ProgressionCompleted        Progression = "Completed"
	ProgressionDeletingGroups   Progression = "DeletingGroups"
)

// Requeue delays. The hub does not poll the managed clusters: the gateway watches their groups
// and wakes a DRPlacementControl when one of its groups changes, and all of a cluster's when it
// stops answering or answers again. These requeues are safety nets only, for a change lost on
// the way; settled ones also wake when the last group sync is about to turn stale (Protected is
// judged against the clock, and no event says that a sync did not come).
const (
	requeueAction      = 5 * time.Second
	requeueUnreachable = 30 * time.Second
	requeueSettled     = 2 * time.Minute
	requeueInvalid     = 30 * time.Second
)

// state is one state of the machine.
type state func(ctx context.Context, sc *scope) (ctrl.Result, error)

// next chooses the state function for this reconcile from the phase and the spec, starting an
// action when the spec asks for one that may start (which records it in the status), and
// recording in ActionAccepted why a spec change is refused or postponed.
func (r *Reconciler) next(sc *scope) state {
	if s := r.rebuild(sc); s != nil {
		return s // a restored DRPlacementControl starts where its groups are, or waits
	}
	if s := r.withoutHub(sc); s != nil {
		return s // a group promoted without the hub is never acted on from an older status
	}
	st := &sc.drpc.Status
	spec := sc.drpc.Spec
	switch st.Phase {
	case v1alpha1.PhaseFailingOver:
		if spec.Action != v1alpha1.ActionFailover || spec.FailoverCluster != st.ActionTarget {
			sc.refuse(v1alpha1.ReasonActionInProgress, fmt.Sprintf(
				"a failover to %s is in progress and finishes first; ask again once the phase is FailedOver", st.ActionTarget))
		}
		return r.failingOver
	case v1alpha1.PhaseRelocating:
		if spec.Action == v1alpha1.ActionFailover && spec.FailoverCluster != "" {
			// A failover may overtake a relocation, which may be stuck on a lost cluster.
			if st.ActionStartTime != nil {
				r.Metrics.actionEnded(v1alpha1.ActionRelocate, ResultOvertaken, sc.now.Sub(st.ActionStartTime.Time))
			}
			r.begin(sc, v1alpha1.PhaseFailingOver, spec.FailoverCluster)
			return r.failingOver
		}
		if spec.Action != v1alpha1.ActionRelocate || spec.PreferredCluster != st.ActionTarget {
			sc.refuse(v1alpha1.ReasonActionInProgress, fmt.Sprintf(
				"a relocation to %s is in progress and finishes first; only a failover may overtake it", st.ActionTarget))
		}
		return r.relocating
	case v1alpha1.PhaseDeploying, "":
		return r.deploying
	}
	// Settled: start what the spec asks, if it may start.
	switch {
	case spec.Action == v1alpha1.ActionFailover && spec.FailoverCluster != st.CurrentPrimary && sc.lost[spec.FailoverCluster] != "":
		sc.refuse(v1alpha1.ReasonClusterDeclaredLost, fmt.Sprintf("failover refused: %s is declared lost (%s)", spec.FailoverCluster, sc.lost[spec.FailoverCluster]))
	case spec.Action == v1alpha1.ActionFailover && spec.FailoverCluster != st.CurrentPrimary:
		r.begin(sc, v1alpha1.PhaseFailingOver, spec.FailoverCluster)
		return r.failingOver
	case spec.Action == v1alpha1.ActionRelocate && spec.PreferredCluster != st.CurrentPrimary:
		if reason, msg := r.relocateRefusal(sc); reason != "" {
			sc.refuse(reason, msg)
			return r.settled
		}
		r.begin(sc, v1alpha1.PhaseRelocating, spec.PreferredCluster)
		return r.relocating
	case spec.Action == v1alpha1.ActionNone && spec.PreferredCluster != "" && spec.PreferredCluster != st.CurrentPrimary:
		sc.refuse(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"the application runs on %s, not on preferredCluster %s: set action Relocate to move it there", st.CurrentPrimary, spec.PreferredCluster))
	}
	return r.settled
}

// relocateRefusal says why a relocation may not start now; empty when it may.
func (r *Reconciler) relocateRefusal(sc *scope) (reason, message string) {
	st := &sc.drpc.Status
	primary, target := sc.view(st.CurrentPrimary), sc.view(sc.drpc.Spec.PreferredCluster)
	for _, cv := range []*clusterView{primary, target} {
		if reason := sc.lost[cv.name]; reason != "" {
			return v1alpha1.ReasonClusterDeclaredLost, fmt.Sprintf("relocate refused: %s is declared lost (%s); a relocation needs both clusters; use failover", cv.name, reason)
		}
		if !cv.reachable() {
			return v1alpha1.ReasonPeerUnreachable, fmt.Sprintf("relocate refused: %s is unreachable (%v); a relocation needs both clusters; use failover", cv.name, cv.err)
		}
	}
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPeerReady); c == nil || c.Status != metav1.ConditionTrue {
		msg := "not observed yet"
		if c != nil {
			msg = c.Message
		}
		return v1alpha1.ReasonPeerNotReady, "relocate refused: the peer is not ready: " + msg
	}
	if !isTrue(primary.vrg, v1alpha1.ConditionDataProtected) {
		return v1alpha1.ReasonPrimaryNotProtected, "relocate refused: " + notYet(primary.name, primary.vrg, v1alpha1.ConditionDataProtected)
	}
	return "", ""
}

// begin starts an action: it records the phase, the target and the start, and clears what
// described the previous state, so stale values never show.
func (r *Reconciler) begin(sc *scope, phase v1alpha1.DRPCPhase, target string) {
	st := &sc.drpc.Status
	st.Phase, st.ActionTarget = phase, target
	start := metav1.NewTime(sc.now.Truncate(time.Second))
	st.ActionStartTime, st.ActionDuration, st.LastGroupSyncTime = &start, nil, nil
	st.Progression = string(ProgressionPromotingTarget)
	reason, verb := v1alpha1.EventFailoverStarted, "Failing over"
	if phase == v1alpha1.PhaseRelocating {
		st.Progression = string(ProgressionStoppingApp)
		reason, verb = v1alpha1.EventRelocateStarted, "Relocating"
	}
	r.event(sc, corev1.EventTypeNormal, reason, "%s from %s to %s", verb, st.CurrentPrimary, target)
}

// complete ends an action on its target.
func (r *Reconciler) complete(sc *scope, phase v1alpha1.DRPCPhase) {
	st := &sc.drpc.Status
	st.Phase, st.CurrentPrimary = phase, st.ActionTarget
	st.Progression = string(ProgressionCompleted)
	if st.ActionStartTime != nil {
		st.ActionDuration = &metav1.Duration{Duration: sc.now.Sub(st.ActionStartTime.Time).Round(time.Millisecond)}
		r.Metrics.actionEnded(actionOfPhase(phase), ResultSucceeded, st.ActionDuration.Duration)
	}
	reason := v1alpha1.EventFailoverCompleted
	if phase == v1alpha1.PhaseRelocated {
		reason = v1alpha1.EventRelocateCompleted
	}
	r.event(sc, corev1.EventTypeNormal, reason, "The application runs on %s (%s)", st.CurrentPrimary, st.ActionDuration.Duration)
}

// finalSyncRequest is the final sync request of the relocation in the status: derived from its
// start, so a restarted hub asks for the same one.
func finalSyncRequest(st *v1alpha1.DRPlacementControlStatus) string {
	if st.ActionStartTime == nil {
		return ""
	}
	return fmt.Sprintf("relocate-%s-%d", st.ActionTarget, st.ActionStartTime.Unix())
}

// settledAction is the action that led to a settled phase, which the groups keep.
func settledAction(phase v1alpha1.DRPCPhase) v1alpha1.DRAction {
	switch phase {
	case v1alpha1.PhaseFailedOver:
		return v1alpha1.ActionFailover
	case v1alpha1.PhaseRelocated:
		return v1alpha1.ActionRelocate
	}
	return v1alpha1.ActionNone
}

// deploying protects the application where it runs: a primary group on the preferred cluster
// (or the failover cluster, when the spec asks for a failover before anything was protected),
// a secondary group on the peer.
func (r *Reconciler) deploying(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drpc.Status
	target := sc.drpc.Spec.PreferredCluster
	if sc.drpc.Spec.Action == v1alpha1.ActionFailover {
		target = sc.drpc.Spec.FailoverCluster
	}
	if st.CurrentPrimary != "" {
		target = st.CurrentPrimary
	}
	st.Phase, st.CurrentPrimary, st.ActionTarget = v1alpha1.PhaseDeploying, target, target
	tv, pv := sc.view(target), sc.view(sc.peer(target))
	if !tv.reachable() {
		st.Progression = string(ProgressionWaitingForTarget)
		sc.waiting = fmt.Sprintf("%s is unreachable: %v", target, tv.err)
		return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
	}
	st.Progression = string(ProgressionCreatingGroups)
	if err := r.ensureGroup(ctx, sc, tv, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionNone, "")); err != nil {
		return ctrl.Result{}, err
	}
	if pv.reachable() {
		if err := r.ensureGroup(ctx, sc, pv, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionNone, "")); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.place(ctx, sc, target); err != nil {
		return ctrl.Result{}, err
	}
	if !isTrue(tv.vrg, v1alpha1.ConditionDataReady) {
		st.Progression = string(ProgressionWaitingForGroup)
		sc.waiting = notYet(target, tv.vrg, v1alpha1.ConditionDataReady)
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	st.Phase, st.Progression = v1alpha1.PhaseDeployed, string(ProgressionCompleted)
	return r.settled(ctx, sc)
}

// settled keeps the application's groups in their roles: primary on currentPrimary, secondary on
// the peer with the action that made it so (a failover's old primary is demoted, discarding
// its stray writes, as soon as it is reachable: nothing else is asked of it before).
func (r *Reconciler) settled(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drpc.Status
	action := settledAction(st.Phase)
	primary, peer := sc.view(st.CurrentPrimary), sc.view(sc.peer(st.CurrentPrimary))
	finalSync := ""
	if st.Phase == v1alpha1.PhaseRelocated {
		finalSync = finalSyncRequest(st)
	}
	result := ctrl.Result{RequeueAfter: requeueSettled}
	if peer.reachable() {
		if err := r.ensureGroup(ctx, sc, peer, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStateSecondary, action, finalSync)); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		result.RequeueAfter = requeueUnreachable
	}
	if primary.reachable() {
		if err := r.ensureGroup(ctx, sc, primary, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStatePrimary, action, "")); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		result.RequeueAfter = requeueUnreachable
	}
	if err := r.place(ctx, sc, append([]string{primary.name}, sc.keepUnacknowledged(peer.name)...)...); err != nil {
		return ctrl.Result{}, err
	}
	if d, ok := untilStale(sc, primary); ok {
		result.RequeueAfter = min(result.RequeueAfter, d)
	}
	st.Progression = string(ProgressionCompleted)
	if applicationDown(primary.vrg) != nil {
		// The action's steps are done, but the application does not run where it moved:
		// Available says why, and the action is not called complete.
		st.Progression = string(ProgressionWaitingForApp)
		result.RequeueAfter = min(result.RequeueAfter, requeueAction)
	} else if !peer.reachable() || !secondary(peer.vrg) {
		st.Progression = string(ProgressionWaitingForPeer)
		if action == v1alpha1.ActionFailover {
			st.Progression = string(ProgressionCleaningUp)
		}
		result.RequeueAfter = min(result.RequeueAfter, requeueUnreachable)
	}
	return result, nil
}

// untilStale returns how long until the primary's last group sync is stale
// (v1alpha1.SyncStaleAfter), when Protected turns SyncStale unless a newer sync comes (a second
// more, so the judgement then sees it stale); false when there is no sync to age or it is stale
// already.
func untilStale(sc *scope, primary *clusterView) (time.Duration, bool) {
	if !primary.reachable() || primary.vrg == nil || primary.vrg.Status.LastGroupSyncTime == nil {
		return 0, false
	}
	staleAfter := v1alpha1.SyncStaleAfter(sc.interval, primary.vrg.Status.SyncRefreshInterval)
	d := primary.vrg.Status.LastGroupSyncTime.Add(staleAfter + time.Second).Sub(sc.now)
	return d, d > 0
}

// failingOver promotes the failover cluster's group. The storage does not protect from two
// primaries: csi-addons retries a refused promotion with force (ceph-csi refuses while the peer
// is primary), so promoting while the old primary is reachable and still primary leaves both
// writable. So with the old primary reachable the hub demotes it first (its agent removes the
// workload, then demotes with resync) and promotes only once the old group reports Secondary
// for its current spec. An old primary that is unreachable, or stops answering while it is
// being demoted, or is declared lost, is not waited for: the target is promoted at once, and
// the old primary is demoted whenever it is reachable again (settled).
func (r *Reconciler) failingOver(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drpc.Status
	target, old := sc.view(st.ActionTarget), sc.view(sc.peer(st.ActionTarget))
	if waiting := targetReleasing(target, old); waiting != "" {
		st.Progression = string(ProgressionWaitingForTarget)
		sc.waiting = waiting
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	if old.reachable() {
		if err := r.ensureGroup(ctx, sc, old, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover, "")); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !target.reachable() {
		st.Progression = string(ProgressionWaitingForTarget)
		sc.waiting = fmt.Sprintf("failover target %s is unreachable: %v", target.name, target.err)
		return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
	}
	keep := sc.keepUnacknowledged(old.name)
	if waiting := demotionAwaited(sc, old); waiting != "" {
		st.Progression = string(ProgressionDemotingSource)
		sc.waiting = waiting
		if err := r.place(ctx, sc, keep...); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	st.Progression = string(ProgressionPromotingTarget)
	// Said once, when the promotion is first asked: the old primary stopped answering while
	// it was being demoted, or never answered (a partition or a lost cluster: the hub cannot
	// tell them apart, and the storage forces the promotion, so a primary that still runs
	// there is a second writable one until it is reachable and demoted).
	if why := withoutDemotion(sc, old); why != "" && !secondary(old.vrg) && !askedPrimary(target.vrg, v1alpha1.ActionFailover) {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventPromotingWithoutDemotion, "Promoting %s without demoting %s first: %s",
			target.name, old.name, why)
	}
	if err := r.ensureGroup(ctx, sc, target, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, "")); err != nil {
		return ctrl.Result{}, err
	}
	ok, waiting := promoted(target.name, target.vrg)
	if !ok {
		if why := withoutDemotion(sc, old); why != "" {
			waiting += fmt.Sprintf("; %s is promoted without demoting %s first: %s", target.name, old.name, why)
		}
		sc.waiting = waiting
		if err := r.place(ctx, sc, keep...); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	st.Progression = string(ProgressionPlacingApp)
	if err := r.place(ctx, sc, append([]string{target.name}, keep...)...); err != nil {
		return ctrl.Result{}, err
	}
	r.complete(sc, v1alpha1.PhaseFailedOver)
	return r.settled(ctx, sc)
}

// demotionAwaited says what a failover waits for before it may promote: the old primary, while
// it answers and is not declared lost, demoted (its group Secondary at its current generation,
// or gone: nothing there can be primary then). Empty when the target may be promoted: the old
// primary is demoted, or unreachable (lost), or was promoted already (the target group is
// primary: a failover that promoted once never waits again).
func demotionAwaited(sc *scope, old *clusterView) string {
	target := sc.view(sc.drpc.Status.ActionTarget)
	switch {
	case askedPrimary(target.vrg, v1alpha1.ActionFailover):
		return ""
	case !old.reachable() || sc.lost[old.name] != "" || old.vrg == nil || secondary(old.vrg):
		return ""
	}
	return fmt.Sprintf("waiting for %s, which answers, to be demoted before %s is promoted (the storage would force the promotion and leave two writable primaries): %s; "+
		"if %s cannot demote (its agent is down), stop it or declare it lost (DRCluster spec.lost) to promote without it",
		old.name, target.name, notYet(old.name, old.vrg, v1alpha1.ConditionDataReady), old.name)
}

// targetReleasing says what a failover waits for before it demotes a reachable old primary: a
// PVC the application deleted on the target that its storage has not released yet. The storage
// releases it only while the volume replays a live primary (ceph-csi); once the old primary is
// demoted none is left, a VolumeReplication being deleted can no longer be promoted, and the
// Terminating PVC would stand for good in the way of the one the promotion restores. Empty when
// the old primary does not answer (a disaster: nothing to wait for), its demotion is asked
// already, or nothing is pending.
func targetReleasing(target, old *clusterView) string {
	if !old.reachable() || !target.reachable() || old.vrg == nil || target.vrg == nil ||
		old.vrg.Spec.ReplicationState != v1alpha1.ReplicationStatePrimary {
		return ""
	}
	if waiting := releasePending(target); waiting != "" {
		return fmt.Sprintf("%s; %s is demoted once it is released: its storage releases it only while it replays a primary", waiting, old.name)
	}
	return ""
}

// askedPrimary reports whether a group is asked already to be the primary of an action
// (a failover's or a relocation's target).
func askedPrimary(vrg *v1alpha1.VolumeReplicationGroup, action v1alpha1.DRAction) bool {
	return vrg != nil && vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary && vrg.Spec.Action == action
}

// withoutDemotion says why a failover promotes its target without the old primary demoted
// first; empty when it is not so.
func withoutDemotion(sc *scope, old *clusterView) string {
	switch {
	case sc.lost[old.name] != "":
		return fmt.Sprintf("%s is declared lost (%s); it is demoted as soon as it is reachable", old.name, sc.lost[old.name])
	case !old.reachable():
		return fmt.Sprintf("%s does not answer (%v), so it is treated as lost; it is demoted as soon as it is reachable", old.name, old.err)
	}
	return ""
}

// relocating moves the application with no data loss: the application is stopped on the
// current primary, its group demoted for the final sync (the agent checks consumers, fences
// and syncs), and only once the final sync is confirmed is the target promoted.
func (r *Reconciler) relocating(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drpc.Status
	target, source := sc.view(st.ActionTarget), sc.view(sc.peer(st.ActionTarget))
	for _, cv := range []*clusterView{source, target} {
		if !cv.reachable() {
			st.Progression = string(ProgressionWaitingForSource)
			if cv == target {
				st.Progression = string(ProgressionWaitingForTarget)
			}
			sc.waiting = fmt.Sprintf("%s is unreachable (%v); a relocation needs both clusters: set action Failover to move the application without it", cv.name, cv.err)
			return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
		}
	}
	// Once the target is asked to be primary, the final sync was confirmed (a relocation
	// begins with the target secondary), and the decision is not taken back: the source's
	// group turns a generation ahead of its status when the hand-off gives it the target's
	// PVCs to receive, and going back would ask the target again, a new generation in the
	// middle of its restore.
	demoted := askedPrimary(target.vrg, v1alpha1.ActionRelocate) ||
		(secondary(source.vrg) && source.vrg.FinalSyncComplete() && source.vrg.Spec.FinalSyncRequest == finalSyncRequest(st))
	if !demoted {
		if err := r.ensureGroup(ctx, sc, source, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate, finalSyncRequest(st))); err != nil {
			return ctrl.Result{}, err
		}
		// Then stop the application: the decision names no cluster while the final sync runs.
		// Only once the source's agent has acted on the relocation (it fences the PVCs and keeps
		// a deleted one for its final sync): a PVC the GitOps tool prunes while the group still
		// looks primary would be released as a scale-down. And only once the recipe's hooks
		// that run before the stop have passed there.
		if acknowledged(source.vrg) && stopHooksPassed(source.vrg) {
			if err := r.place(ctx, sc); err != nil {
				return ctrl.Result{}, err
			}
		}
		st.Progression = string(ProgressionFinalSync)
		if c := condition(source.vrg, v1alpha1.ConditionDataReady); c != nil && c.Reason == v1alpha1.ReasonPVCInUse {
			st.Progression = string(ProgressionStoppingApp)
		}
		sc.waiting = fmt.Sprintf("waiting for %s's VolumeReplicationGroup to be Secondary with the final sync done: %s",
			source.name, notYet(source.name, source.vrg, v1alpha1.ConditionDataReady))
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	st.Progression = string(ProgressionPromotingTarget)
	if err := r.ensureGroup(ctx, sc, target, groupSpec(sc.drpc, sc.policy, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate, "")); err != nil {
		return ctrl.Result{}, err
	}
	if ok, waiting := promoted(target.name, target.vrg); !ok {
		sc.waiting = waiting
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
	st.Progression = string(ProgressionPlacingApp)
	if err := r.place(ctx, sc, target.name); err != nil {
		return ctrl.Result{}, err
	}
	r.complete(sc, v1alpha1.PhaseRelocated)
	return r.settled(ctx, sc)
}
