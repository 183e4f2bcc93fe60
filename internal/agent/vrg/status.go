package vrg

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
)

// computeStatus writes the group's status from what the reconcile observed. observedGeneration
// moves only after a fully successful pass: no error, every PVC replicating and the metadata in
// every store.
func computeStatus(sc *scope, succeeded bool) {
	vrg := sc.vrg
	st := &vrg.Status
	if sc.specProblem != "" {
		msg, reason := sc.specProblem, sc.specReason
		if reason == "" {
			reason = v1alpha1.ReasonInvalidSpec
		}
		for _, t := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected} {
			setCondition(vrg, &st.Conditions, t, false, reason, msg)
		}
		st.State = v1alpha1.StateUnknown
		return
	}
	if sc.restore != nil && !sc.restore.done {
		// A restore completed earlier in this generation keeps its condition as written then.
		c := clusterDataReadyCondition(sc.restore)
		setConditionStatus(vrg, &st.Conditions, c.Type, c.Status, c.Reason, c.Message)
	}
	for _, c := range []*metav1.Condition{sc.kubeObjectsReady, sc.workloadsReady} {
		if c != nil {
			setConditionStatus(vrg, &st.Conditions, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if !sc.pvcsListed {
		// Nothing was observed (the API server failed); the last status stands and the error
		// is retried.
		return
	}
	if vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary {
		if sc.finalSync != nil {
			st.FinalSync = sc.finalSync
		}
		computeSecondaryStatus(sc, succeeded)
		return
	}
	st.ProtectedPVCs = protectedPVCs(vrg, sc.pvcs, st.ProtectedPVCs)
	st.ConsistencyGroups = groupsStatus(vrg, sc.pvcs, st.ConsistencyGroups)
	dataReady := dataReadyCondition(sc.pvcs, protectedNamespaces(vrg))
	dataProtected := dataProtectedCondition(sc.pvcs, vrg.Spec.KubeObjectProtection != nil)
	clusterData := clusterDataProtectedCondition(sc.stores, sc.metadataPending, sc.metadataObjects)
	if sc.epoch.isStale() {
		clusterData = staleCondition(sc.epoch, primaryPVCs(sc.pvcs))
	}
	if sc.metadataDeferred {
		clusterData = condition(v1alpha1.ConditionClusterDataProtected, false, v1alpha1.ReasonProgressing,
			"the metadata is written once the restore completes (ClusterDataReady)")
	}
	for _, c := range []metav1.Condition{dataReady, dataProtected, clusterData} {
		setCondition(vrg, &st.Conditions, c.Type, c.Status == metav1.ConditionTrue, c.Reason, c.Message)
	}
	st.State = v1alpha1.StateUnknown
	if dataReady.Status == metav1.ConditionTrue {
		st.State = v1alpha1.StatePrimary
	}
	st.LastGroupSyncTime = recoveryPoint(sc, st.LastGroupSyncTime)
	st.SyncRefreshInterval = syncRefreshInterval(sc.pvcs)
	if succeeded && dataReady.Status == metav1.ConditionTrue && clusterData.Status == metav1.ConditionTrue && (sc.restore == nil || sc.restore.complete()) {
		st.ObservedGeneration = vrg.Generation
	}
}

// setCondition sets a True or False condition through setConditionStatus.
func setCondition(vrg *v1alpha1.VolumeReplicationGroup, conditions *[]metav1.Condition, condType string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	setConditionStatus(vrg, conditions, condType, s, reason, message)
}

// setConditionStatus is the one condition setter: it stamps the group's generation and keeps
// the transition time while the status does not change. Unknown is for a condition that does
// not apply to the group's role.
func setConditionStatus(vrg *v1alpha1.VolumeReplicationGroup, conditions *[]metav1.Condition, condType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: vrg.Generation,
	})
}

// computeSecondaryStatus writes the status of a secondary group. Its conditions:
//
//   - DataReady: True with reason Secondary when every selected PVC is secondary, including
//     when none is selected (the usual secondary: its peer's primary protects the PVCs, and
//     this cluster holds only the replicated images); False with the first PVC's problem (in
//     use, waiting for the fence, demotion under way) otherwise. "Ready" means ready for the
//     role asked, as for a primary.
//   - DataProtected: False with reason VolSyncAddressUnreachable while a VolSync destination
//     has no address the peer can use (the message says which spec.volSyncAddress to choose),
//     or VolSyncMoverUserUnknown while its mover has no user (the message says what to set);
//     otherwise, like the next two, Unknown with reason Secondary.
//   - DataProtected, ClusterDataReady and ClusterDataProtected: Unknown with reason Secondary.
//     They describe a primary's replication, restore and metadata, and the hub reads them from
//     the primary's group; True would claim protection this cluster does not provide, False a
//     problem it does not have.
//
// state is Secondary once DataReady is True.
func computeSecondaryStatus(sc *scope, succeeded bool) {
	vrg := sc.vrg
	st := &vrg.Status
	st.ProtectedPVCs = withoutSyncs(protectedPVCs(vrg, sc.pvcs, st.ProtectedPVCs))
	st.ConsistencyGroups = groupsStatus(vrg, sc.pvcs, st.ConsistencyGroups)
	var dataReady metav1.Condition
	namespaces := strings.Join(protectedNamespaces(vrg), ", ")
	if reason, msg, n := firstProblem(sc.pvcs, v1alpha1.ConditionDataReady); n > 0 {
		dataReady = condition(v1alpha1.ConditionDataReady, false, reason, andMore(msg, n))
	} else if len(sc.pvcs) == 0 {
		dataReady = condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSecondary, fmt.Sprintf(
			"the group is secondary and no PVC in namespaces %s matches spec.pvcSelector: the peer's primary protects them", namespaces))
	} else {
		dataReady = condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSecondary, fmt.Sprintf(
			"all %d PVCs are secondary and receive the peer's replication", len(sc.pvcs)))
	}
	setConditionStatus(vrg, &st.Conditions, dataReady.Type, dataReady.Status, dataReady.Reason, dataReady.Message)
	for _, c := range [][2]string{
		{v1alpha1.ConditionDataProtected, "the group is secondary: the primary's group reports whether the data is protected"},
		{v1alpha1.ConditionClusterDataReady, "the group is secondary: PVs and PVCs are restored when it is promoted"},
		{v1alpha1.ConditionClusterDataProtected, "the group is secondary: the primary's group writes the metadata"},
	} {
		if u := sc.volSyncUnreachable; u != nil && c[0] == u.Type {
			// No data can reach this cluster: a problem of the secondary, not the primary's.
			setConditionStatus(vrg, &st.Conditions, u.Type, u.Status, u.Reason, u.Message)
			continue
		}
		setConditionStatus(vrg, &st.Conditions, c[0], metav1.ConditionUnknown, v1alpha1.ReasonSecondary, c[1])
	}
	st.State = v1alpha1.StateUnknown
	st.LastGroupSyncTime, st.SyncRefreshInterval = nil, nil
	if dataReady.Status == metav1.ConditionTrue {
		st.State = v1alpha1.StateSecondary
		if succeeded {
			st.ObservedGeneration = vrg.Generation
		}
	}
}

func condition(condType string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message}
}

// protectedPVCs builds status.protectedPVCs, keeping each PVC's condition transition times from
// the previous status.
func protectedPVCs(vrg *v1alpha1.VolumeReplicationGroup, pvcs []*pvcState, previous []v1alpha1.ProtectedPVC) []v1alpha1.ProtectedPVC {
	out := make([]v1alpha1.ProtectedPVC, 0, len(pvcs))
	for _, ps := range pvcs {
		p := v1alpha1.ProtectedPVC{
			Namespace: ps.pvc.Namespace, Name: ps.pvc.Name, StorageClassName: ps.storageClass,
			Backend: ps.backend, ReplicationID: ps.sync.ReplicationID,
			AccessModes: ps.pvc.Spec.AccessModes, VolumeMode: ps.pvc.Spec.VolumeMode,
			LastSyncTime: ps.sync.LastSyncTime, LastSyncDuration: ps.sync.LastSyncDuration, LastSyncBytes: ps.sync.LastSyncBytes,
			MoverSecurityContext: ps.moverUser, ConsistencyGroup: ps.groupName(),
		}
		if q, ok := ps.pvc.Status.Capacity[corev1.ResourceStorage]; ok {
			p.Capacity = &q
		} else if q, ok := ps.pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			p.Capacity = &q
		}
		for _, prev := range previous {
			if prev.Namespace == p.Namespace && prev.Name == p.Name {
				p.Conditions = prev.Conditions
				if p.MoverSecurityContext == nil {
					// Kept while no pass resolves it (no pod mounts the PVC, or it is demoted).
					p.MoverSecurityContext = prev.MoverSecurityContext
				}
			}
		}
		for _, c := range pvcConditions(ps) {
			setConditionStatus(vrg, &p.Conditions, c.Type, c.Status, c.Reason, c.Message)
		}
		out = append(out, p)
	}
	return out
}

// pvcConditions are one PVC's DataReady (replication established) and DataProtected (a sync
// completed).
func pvcConditions(ps *pvcState) []metav1.Condition {
	r := ps.result
	if ps.secondary {
		notApplicable := metav1.Condition{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonSecondary,
			Message: fmt.Sprintf("PVC %s is demoted: the peer's primary protects the data", ps.key())}
		if !r.IsDone() {
			return []metav1.Condition{condition(v1alpha1.ConditionDataReady, false, r.Reason, r.Message), notApplicable}
		}
		if ps.release != "" {
			return []metav1.Condition{condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonReleasePending,
				fmt.Sprintf("PVC %s is secondary; %s", ps.key(), ps.release)), notApplicable}
		}
		return []metav1.Condition{condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSecondary,
			fmt.Sprintf("PVC %s is secondary and receives the peer's replication", ps.key())), notApplicable}
	}
	if !r.IsDone() && r.Writable {
		return []metav1.Condition{
			condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded,
				fmt.Sprintf("PVC %s is primary and writable; its replication with %s is not established yet", ps.key(), ps.backend)),
			condition(v1alpha1.ConditionDataProtected, false, r.Reason, "replication is not established: "+r.Message),
		}
	}
	if !r.IsDone() {
		return []metav1.Condition{
			condition(v1alpha1.ConditionDataReady, false, r.Reason, r.Message),
			condition(v1alpha1.ConditionDataProtected, false, r.Reason, "replication is not established: "+r.Message),
		}
	}
	ready := condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("PVC %s is primary and replicates with %s", ps.key(), ps.backend))
	if ps.sync.LastSyncTime == nil {
		return []metav1.Condition{ready, condition(v1alpha1.ConditionDataProtected, false, v1alpha1.ReasonProgressing,
			fmt.Sprintf("waiting for the first sync of PVC %s", ps.key()))}
	}
	return []metav1.Condition{ready, condition(v1alpha1.ConditionDataProtected, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("PVC %s last synced at %s", ps.key(), ps.sync.LastSyncTime.UTC().Format(time.RFC3339)))}
}

// firstProblem returns the reason and message of the first PVC whose condition of condType is
// not True, preferring PVCs that need a person (Failed) over those in progress, and how many
// PVCs have such a problem.
func firstProblem(pvcs []*pvcState, condType string) (reason, message string, count int) {
	rank := -1
	for _, ps := range pvcs {
		for _, c := range pvcConditions(ps) {
			if c.Type != condType || c.Status == metav1.ConditionTrue {
				continue
			}
			count++
			r := 0
			if ps.result.Outcome == replication.OutcomeFailed {
				r = 1
			}
			if r > rank {
				rank, reason, message = r, c.Reason, c.Message
			}
		}
	}
	return reason, message, count
}

func andMore(message string, count int) string {
	if count > 1 {
		return fmt.Sprintf("%s (and %d more PVCs)", message, count-1)
	}
	return message
}

// dataReadyCondition is True when every selected PVC replicates as primary.
func dataReadyCondition(pvcs []*pvcState, namespaces []string) metav1.Condition {
	if len(pvcs) == 0 {
		return condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded,
			fmt.Sprintf("no PVC in namespaces %s matches spec.pvcSelector", strings.Join(namespaces, ", ")))
	}
	if reason, msg, n := firstProblem(pvcs, v1alpha1.ConditionDataReady); n > 0 {
		return condition(v1alpha1.ConditionDataReady, false, reason, andMore(msg, n))
	}
	return condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("all %d PVCs are primary and replicate", len(pvcs)))
}

// dataProtectedCondition is True when every selected PVC has completed a sync; objects says
// whether the group captures the objects, which alone protect a group with no PVC.
func dataProtectedCondition(pvcs []*pvcState, objects bool) metav1.Condition {
	if len(pvcs) == 0 {
		msg := "no PVC is selected"
		if objects {
			msg += ": the group is protected by its captured objects (KubeObjectsReady)"
		}
		return condition(v1alpha1.ConditionDataProtected, true, v1alpha1.ReasonSucceeded, msg)
	}
	if reason, msg, n := firstProblem(pvcs, v1alpha1.ConditionDataProtected); n > 0 {
		return condition(v1alpha1.ConditionDataProtected, false, reason, andMore(msg, n))
	}
	oldest := lastGroupSyncTime(pvcs)
	return condition(v1alpha1.ConditionDataProtected, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("all %d PVCs completed a sync; the oldest last sync is %s", len(pvcs), oldest.UTC().Format(time.RFC3339)))
}

// clusterDataProtectedCondition is True when every store holds the metadata of every PVC that
// can be stored. A failing store is named with its reason; the others are still written.
func clusterDataProtectedCondition(stores []storeOutcome, pending []string, objects int) metav1.Condition {
	var failed, ok []string
	reason := ""
	for _, s := range stores {
		if s.err == nil {
			ok = append(ok, s.name)
			continue
		}
		if reason == "" {
			reason = objectstore.ReasonOf(s.err)
		}
		failed = append(failed, s.err.Error())
	}
	switch {
	case len(failed) > 0:
		msg := strings.Join(failed, "; ")
		if len(ok) > 0 {
			msg += fmt.Sprintf("; the metadata is written to S3 profiles %s", strings.Join(ok, ", "))
		}
		return condition(v1alpha1.ConditionClusterDataProtected, false, reason, msg)
	case stores == nil:
		return condition(v1alpha1.ConditionClusterDataProtected, false, v1alpha1.ReasonProgressing, "the metadata is not written yet")
	case len(pending) > 0:
		return condition(v1alpha1.ConditionClusterDataProtected, false, v1alpha1.ReasonPVCNotBound,
			fmt.Sprintf("the metadata of PVCs %s is written once they are Bound", strings.Join(pending, ", ")))
	}
	return condition(v1alpha1.ConditionClusterDataProtected, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("the metadata (%d objects) is in S3 profiles %s", objects, strings.Join(ok, ", ")))
}

// primaryPVCs names the PVCs whose storage reports them primary on this cluster.
func primaryPVCs(pvcs []*pvcState) []string {
	var out []string
	for _, ps := range pvcs {
		if ps.sync.Primary {
			out = append(out, ps.key())
		}
	}
	return out
}

// withoutSyncs clears the last sync of each PVC of a secondary's status. The primary's group
// reports every sync of the pair (and the recovery point, lastGroupSyncTime), and the hub reads
// it there; a secondary that copied each sync into its own status patched itself at every sync
// of its storage for nothing drover reads: once every group had been failed over or relocated
// (its secondary keeps demoted PVCs), as many writes as the primaries', in the same queues and
// API servers as the groups of an action.
func withoutSyncs(pvcs []v1alpha1.ProtectedPVC) []v1alpha1.ProtectedPVC {
	for i := range pvcs {
		pvcs[i].LastSyncTime, pvcs[i].LastSyncDuration, pvcs[i].LastSyncBytes = nil, nil, nil
	}
	return pvcs
}

// recoveryPoint is the primary's status.lastGroupSyncTime: the oldest last sync of its PVCs
// (lastGroupSyncTime) or, with no PVC selected and the objects captured, the last time every
// store held the current capture of the objects. Such a group (a configuration-only
// application, or one whose StatefulSet has not made its PVCs yet) is protected by its
// captures alone, and its recovery point ages between them as a sync's does: the hub judges
// it against the interval in the same way. A pass that took no capture (none was due, or a
// store failed) keeps the previous one, which ages. A PVC that appears joins the group and the
// recovery point is its PVCs' again: nil until each completed a sync.
func recoveryPoint(sc *scope, previous *metav1.Time) *metav1.Time {
	if len(sc.pvcs) > 0 || sc.vrg.Spec.KubeObjectProtection == nil {
		return lastGroupSyncTime(sc.pvcs)
	}
	if !sc.capturedEverywhere.IsZero() {
		return &metav1.Time{Time: sc.capturedEverywhere.Truncate(time.Second)}
	}
	return previous
}

// syncRefreshInterval is how often the storage refreshes the PVCs' sync times, the longest of
// theirs (a PVC's backend may report its syncs up to that long after they completed); nil when
// every PVC's are reported as they complete. The hub allows for it before it calls the group's
// last sync stale (v1alpha1.SyncStaleAfter).
func syncRefreshInterval(pvcs []*pvcState) *metav1.Duration {
	var longest time.Duration
	for _, ps := range pvcs {
		longest = max(longest, ps.sync.RefreshInterval)
	}
	if longest == 0 {
		return nil
	}
	return &metav1.Duration{Duration: longest}
}

// lastGroupSyncTime is the oldest last sync of the PVCs: the group's recovery point. It is nil
// while any PVC has not completed a sync, since the group has no complete recovery point then.
func lastGroupSyncTime(pvcs []*pvcState) *metav1.Time {
	var oldest *metav1.Time
	for _, ps := range pvcs {
		t := ps.sync.LastSyncTime
		if t == nil {
			return nil
		}
		if oldest == nil || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest
}
