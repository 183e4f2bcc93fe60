package drpc

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
)

// setCondition sets a condition stamped with the DRPlacementControl's generation.
func (sc *scope) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&sc.drpc.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: sc.drpc.Generation,
	})
}

// refuse records why the action the spec asks for is refused or postponed.
func (sc *scope) refuse(reason, message string) {
	if sc.refusal == nil {
		sc.refusal = &refusal{reason: reason, message: message}
	}
}

// computeConditions writes Available, PeerReady, Protected and ActionAccepted, the groups'
// summaries and lastGroupSyncTime from what this reconcile observed.
func computeConditions(sc *scope) {
	st := &sc.drpc.Status
	st.VRGs = summaries(sc)
	st.Hooks = hookRuns(sc)
	inAction := st.Phase == v1alpha1.PhaseFailingOver || st.Phase == v1alpha1.PhaseRelocating || st.Phase == v1alpha1.PhaseDeploying
	primary := sc.view(st.CurrentPrimary)

	if sc.refusal != nil {
		sc.setCondition(v1alpha1.ConditionActionAccepted, metav1.ConditionFalse, sc.refusal.reason, sc.refusal.message)
	} else {
		sc.setCondition(v1alpha1.ConditionActionAccepted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the action the spec asks for is accepted")
	}
	if primary == nil {
		// No cluster is known to run the application yet: a restored DRPlacementControl whose
		// status the groups do not tell yet (rebuild.go).
		for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionPeerReady, v1alpha1.ConditionProtected} {
			sc.setCondition(t, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, sc.waiting)
		}
		return
	}

	available(sc, inAction, primary)
	peerReady(sc, inAction, primary)

	st.LastGroupSyncTime, st.SyncRefreshInterval = nil, nil
	if !inAction && primary.reachable() && primary.vrg != nil {
		st.LastGroupSyncTime = primary.vrg.Status.LastGroupSyncTime.DeepCopy()
		st.SyncRefreshInterval = primary.vrg.Status.SyncRefreshInterval.DeepCopy()
	}
	status, reason, message := protected(sc, inAction, primary)
	sc.setCondition(v1alpha1.ConditionProtected, status, reason, message)
	hookConditions(sc)
}

// available judges Available: the application runs on the current primary.
func available(sc *scope, inAction bool, primary *clusterView) {
	st := &sc.drpc.Status
	switch {
	case inAction:
		sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress,
			fmt.Sprintf("%s to %s, step %s: %s", st.Phase, st.ActionTarget, st.Progression, sc.waiting))
	case !primary.reachable():
		sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionUnknown, v1alpha1.ReasonUnknown,
			fmt.Sprintf("%s, where the application runs, is unreachable: %v; set action Failover to start it on the peer", st.CurrentPrimary, primary.err))
	default:
		ok, waiting := promoted(primary.name, primary.vrg)
		if down := applicationDown(primary.vrg); down != nil && ok {
			sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionFalse, down.Reason,
				fmt.Sprintf("the application does not run on %s yet: %s", st.CurrentPrimary, down.Message))
		} else if ok || (settledAction(st.Phase) == v1alpha1.ActionNone && isTrue(primary.vrg, v1alpha1.ConditionDataReady)) {
			sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("the application runs on %s", st.CurrentPrimary))
		} else {
			sc.setCondition(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonProgressing, waiting)
		}
	}
}

// peerReady judges PeerReady: the peer is Secondary and can take over.
func peerReady(sc *scope, inAction bool, primary *clusterView) {
	st := &sc.drpc.Status
	peer := sc.view(sc.peer(st.CurrentPrimary))
	untrusted := untrustedPeerStatus(sc, peer)
	switch {
	case inAction:
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, fmt.Sprintf("%s to %s in progress", st.Phase, st.ActionTarget))
	case !peer.reachable() && sc.lost[peer.name] != "":
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonPeerUnreachable,
			fmt.Sprintf("peer %s is declared lost (%s) and unreachable: %v; its VolumeReplicationGroup is demoted as soon as the hub reaches it", peer.name, sc.lost[peer.name], peer.err))
	case !peer.reachable():
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonPeerUnreachable,
			fmt.Sprintf("peer %s is unreachable: %v; its VolumeReplicationGroup is demoted as soon as it is reachable", peer.name, peer.err))
	case untrusted != "":
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonUntrustedPeerStatus, untrusted)
	case unreachableDestination(peer.vrg) != nil:
		c := unreachableDestination(peer.vrg)
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, c.Reason,
			fmt.Sprintf("%s cannot receive the application's data: %s", peer.name, c.Message))
	case secondary(peer.vrg):
		if waiting := releasePending(peer); waiting != "" {
			sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, waiting)
			break
		}
		if waiting := recoveryPointWaiting(primary, peer); waiting != "" {
			sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, waiting)
			break
		}
		if waiting := volSyncWaiting(primary, peer); waiting != "" {
			sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, waiting)
			break
		}
		msg := fmt.Sprintf("%s's VolumeReplicationGroup is Secondary", peer.name)
		if objectsOnly(primary) {
			msg = fmt.Sprintf("no PVCs selected: %s's VolumeReplicationGroup is Secondary and takes over from the captured objects, last captured %s",
				peer.name, primary.vrg.Status.LastGroupSyncTime.UTC().Format(time.RFC3339))
		}
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
	default:
		sc.setCondition(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing,
			"waiting for the peer to be Secondary: "+notYet(peer.name, peer.vrg, v1alpha1.ConditionDataReady))
	}
}

// protected judges Protected: the primary's data and metadata replicate and its last group sync
// is not stale: no older than twice the policy's interval plus the storage's refresh of the
// sync times it reports (v1alpha1.SyncStaleAfter). With csi-addons and an interval under two
// minutes the refresh is the interval itself, so a healthy last sync is up to twice the
// interval (and the sync's duration) old just before a refresh: judged against twice the
// interval alone, Protected would flap at every other refresh. A group with no PVC selected is
// protected by its captured objects alone (capturedProtected).
func protected(sc *scope, inAction bool, primary *clusterView) (metav1.ConditionStatus, string, string) {
	st := &sc.drpc.Status
	switch {
	case inAction:
		return metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, fmt.Sprintf("%s to %s in progress", st.Phase, st.ActionTarget)
	case !primary.reachable():
		return metav1.ConditionUnknown, v1alpha1.ReasonUnknown, fmt.Sprintf("%s is unreachable: %v", primary.name, primary.err)
	}
	if peer := sc.view(sc.peer(primary.name)); peer != nil && !peer.reachable() && sc.lost[peer.name] != "" {
		// Whatever the primary's group reports of the stores it reaches, there is no second
		// copy to fail over to: the peer and its store are gone until it is back and demoted.
		return metav1.ConditionFalse, v1alpha1.ReasonClusterDeclaredLost, fmt.Sprintf(
			"the application runs on %s alone: its peer %s is declared lost and unreachable, so its data has no second copy until %s answers, is reached by the hub and is demoted (PeerReady says how)",
			primary.name, peer.name, peer.name)
	}
	for _, ct := range []string{v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
		if !isTrue(primary.vrg, ct) {
			reason := v1alpha1.ReasonProgressing
			if c := condition(primary.vrg, ct); c != nil {
				reason = c.Reason
			}
			return metav1.ConditionFalse, reason, notYet(primary.name, primary.vrg, ct)
		}
	}
	if objectsOnly(primary) {
		return capturedProtected(sc, primary)
	}
	last := st.LastGroupSyncTime
	if last == nil {
		return metav1.ConditionFalse, v1alpha1.ReasonProgressing, "no group sync has completed yet"
	}
	if age := sc.now.Sub(last.Time); age > v1alpha1.SyncStaleAfter(sc.interval, st.SyncRefreshInterval) {
		return metav1.ConditionFalse, v1alpha1.ReasonSyncStale, fmt.Sprintf("the last group sync was %s ago, more than %s",
			age.Round(time.Second), v1alpha1.SyncStaleAllowance(sc.interval, st.SyncRefreshInterval))
	}
	return metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("data and metadata replicate; last group sync %s", last.UTC().Format(time.RFC3339))
}

// releasePending says which PVC the application deleted on the peer still waits for its
// storage to release it (DataReady reason ReleasePending): the peer is not ready to take over
// until it has gone, since a promotion there would find the Terminating PVC in the way of the
// one it restores. Empty when none does.
func releasePending(peer *clusterView) string {
	for _, p := range peer.vrg.Status.ProtectedPVCs {
		if c := apimeta.FindStatusCondition(p.Conditions, v1alpha1.ConditionDataReady); c != nil && c.Reason == v1alpha1.ReasonReleasePending {
			return fmt.Sprintf("waiting for %s's storage to release PVC %s/%s, deleted there: %s", peer.name, p.Namespace, p.Name, c.Message)
		}
	}
	return ""
}

// objectsOnly reports whether the primary's group selects no PVC and captures the objects: a
// configuration-only application, or one whose PVCs do not exist yet. Its recovery point
// (lastGroupSyncTime) is then the last capture that every store, the peer's included, holds
// (internal/agent/vrg, recoveryPoint); a PVC that appears joins the group, which is judged by
// its syncs again.
func objectsOnly(primary *clusterView) bool {
	return primary.reachable() && primary.vrg != nil && primary.vrg.Spec.KubeObjectProtection != nil &&
		len(primary.vrg.Status.ProtectedPVCs) == 0
}

// capturedProtected judges Protected for a group protected by its captured objects alone: they
// are captured (KubeObjectsReady), and the last capture every store holds is no older than
// twice the interval, as a sync is judged.
func capturedProtected(sc *scope, primary *clusterView) (metav1.ConditionStatus, string, string) {
	const none = "no PVCs selected: "
	if !isTrue(primary.vrg, v1alpha1.ConditionKubeObjectsReady) {
		reason := v1alpha1.ReasonProgressing
		if c := condition(primary.vrg, v1alpha1.ConditionKubeObjectsReady); c != nil {
			reason = c.Reason
		}
		return metav1.ConditionFalse, reason, none + "the group is protected by its captured objects, which are not captured yet: " +
			notYet(primary.name, primary.vrg, v1alpha1.ConditionKubeObjectsReady)
	}
	last := sc.drpc.Status.LastGroupSyncTime
	if last == nil {
		return metav1.ConditionFalse, v1alpha1.ReasonProgressing, none + "waiting for the first capture of the objects that every S3 profile holds"
	}
	if age := sc.now.Sub(last.Time); age > 2*sc.interval {
		return metav1.ConditionFalse, v1alpha1.ReasonSyncStale, fmt.Sprintf(none+"the last capture of the objects that every S3 profile holds was %s ago, more than twice the interval %s",
			age.Round(time.Second), sc.interval)
	}
	return metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf(none+"protected by its captured objects, last captured %s; the metadata replicates",
		last.UTC().Format(time.RFC3339))
}

// summaries summarises each cluster's group for status.vrgs.
func summaries(sc *scope) []v1alpha1.VRGSummary {
	out := make([]v1alpha1.VRGSummary, 0, 2)
	prev := map[string]v1alpha1.VRGSummary{}
	for _, s := range sc.drpc.Status.VRGs {
		prev[s.Cluster] = s
	}
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		switch {
		case !cv.reachable():
			// Keep the last summary seen, saying nothing new about a cluster that did not answer.
			if s, ok := prev[name]; ok {
				out = append(out, s)
			}
		case cv.vrg != nil:
			s := summary(name, cv.vrg)
			if p, ok := prev[name]; ok {
				s = withPVCsOf(p, s)
			}
			out = append(out, s)
		}
	}
	return out
}

// summary is the short view of a group that status.vrgs keeps: the statuses of DataReady and
// DataProtected, only the conditions that say something is wrong, and its PVCs' last syncs.
func summary(cluster string, vrg *v1alpha1.VolumeReplicationGroup) v1alpha1.VRGSummary {
	s := v1alpha1.VRGSummary{
		Cluster: cluster, ReplicationState: vrg.Spec.ReplicationState, State: vrg.Status.State,
		LastGroupSyncTime: vrg.Status.LastGroupSyncTime.DeepCopy(), ObservedGeneration: vrg.Status.ObservedGeneration,
		AgentVersion:  vrg.Status.AgentVersion,
		ProtectedPVCs: ptr.To(int32(len(vrg.Status.ProtectedPVCs))), //nolint:gosec // a group holds far fewer than 2^31 PVCs
		PVCs:          pvcSummaries(vrg),
	}
	for _, c := range vrg.Status.Conditions {
		switch c.Type {
		case v1alpha1.ConditionDataReady:
			s.DataReady = c.Status
		case v1alpha1.ConditionDataProtected:
			s.DataProtected = c.Status
		}
		if c.Status != metav1.ConditionTrue && c.Reason != v1alpha1.ReasonSecondary {
			s.Problems = append(s.Problems, *c.DeepCopy())
		}
	}
	return s
}

// recoveryPointWaiting says why a Secondary peer cannot take over yet: it holds a copy of the
// application's data only once every PVC of the primary completed a sync (the primary's
// lastGroupSyncTime). Without this, a peer was PeerReady while the primary had not reported
// its PVCs yet (the workload was still being created), and turned not ready again when they
// appeared: PeerReady must turn True once, when the peer really can take over. Empty when
// nothing is missing (or the primary is not observed).
func recoveryPointWaiting(primary, peer *clusterView) string {
	switch {
	case !primary.reachable() || primary.vrg == nil || primary.vrg.Status.LastGroupSyncTime != nil:
		return ""
	case objectsOnly(primary):
		return fmt.Sprintf("no PVCs selected: waiting for a capture of the objects from %s that every S3 profile holds: %s takes over from it",
			primary.name, peer.name)
	case len(primary.vrg.Status.ProtectedPVCs) == 0:
		return fmt.Sprintf("waiting for %s to protect the application's PVCs: its group protects none yet, so %s holds no copy to take over from",
			primary.name, peer.name)
	}
	return fmt.Sprintf("waiting for the first sync of every PVC from %s: %s holds a copy to take over from only after it (%s)",
		primary.name, peer.name, notYet(primary.name, primary.vrg, v1alpha1.ConditionDataProtected))
}

// unreachableDestination is a secondary's DataProtected when it has a VolSync destination the
// primary cannot reach (reason VolSyncAddressUnreachable, naming the DRPolicy setting to
// choose) or whose mover has no user to run as (VolSyncMoverUserUnknown, naming what to set),
// or nil.
func unreachableDestination(vrg *v1alpha1.VolumeReplicationGroup) *metav1.Condition {
	if vrg == nil || vrg.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		return nil
	}
	if c := condition(vrg, v1alpha1.ConditionDataProtected); c != nil &&
		(c.Reason == v1alpha1.ReasonVolSyncAddressUnreachable || c.Reason == v1alpha1.ReasonVolSyncMoverUserUnknown) {
		return c
	}
	return nil
}

// volSyncWaiting says what a VolSync peer still lacks to receive the primary's PVCs: a secondary
// is ready for the next action only once it has a destination for every VolSync PVC the primary
// protects and the primary has been handed it; empty when nothing is missing (or the primary is
// not observed).
func volSyncWaiting(primary, peer *clusterView) string {
	if !primary.reachable() || primary.vrg == nil || peer.vrg == nil {
		return ""
	}
	reported, handed := map[string]bool{}, map[string]bool{}
	for _, d := range peer.vrg.Status.VolSyncDestinations {
		reported[d.PVCNamespace+"/"+d.PVCName] = true
	}
	if vs := primary.vrg.Spec.VolSync; vs != nil {
		for _, d := range vs.Destinations {
			handed[d.PVCNamespace+"/"+d.PVCName] = true
		}
	}
	for _, p := range primary.vrg.Status.ProtectedPVCs {
		if p.Backend != v1alpha1.BackendVolSync {
			continue
		}
		key := p.Namespace + "/" + p.Name
		switch {
		case !reported[key]:
			return fmt.Sprintf("waiting for %s's VolSync destination of PVC %s", peer.name, key)
		case !handed[key]:
			return fmt.Sprintf("waiting to hand %s's VolSync destination of PVC %s to %s", peer.name, key, primary.name)
		}
	}
	return ""
}
