package drpc

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// pvcSummaries lists a group's PVCs for its summary (status.vrgs[].pvcs): every PVC that
// reports a sync or that something holds back, so all of a primary's and, of a secondary, only
// those that are not ready. Past v1alpha1.MaxPVCSummaries it keeps the PVCs a person wants to
// see first: those held back, then the least recently synced (never synced first); the
// summary's protectedPVCs holds the total. The result is sorted by namespace and name.
func pvcSummaries(vrg *v1alpha1.VolumeReplicationGroup) []v1alpha1.PVCSyncSummary {
	var out []v1alpha1.PVCSyncSummary
	for i := range vrg.Status.ProtectedPVCs {
		p := &vrg.Status.ProtectedPVCs[i]
		s := v1alpha1.PVCSyncSummary{Namespace: p.Namespace, Name: p.Name, Reason: holdsBack(p.Conditions),
			LastSyncTime: p.LastSyncTime.DeepCopy(), LastSyncDuration: p.LastSyncDuration.DeepCopy()}
		if c := apimeta.FindStatusCondition(p.Conditions, v1alpha1.ConditionDataProtected); c != nil {
			s.DataProtected = c.Status
		}
		if s.LastSyncTime == nil && s.Reason == "" {
			continue // a secondary's PVC, receiving the peer's syncs
		}
		out = append(out, s)
	}
	if len(out) > v1alpha1.MaxPVCSummaries {
		slices.SortStableFunc(out, firstToSee)
		out = out[:v1alpha1.MaxPVCSummaries]
	}
	slices.SortFunc(out, func(a, b v1alpha1.PVCSyncSummary) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// holdsBack is the reason of a PVC's DataReady when it is not True, else of its DataProtected
// when it is not True; a secondary's deferral to the primary (reason Secondary) holds nothing
// back. Empty when nothing does.
func holdsBack(conds []metav1.Condition) string {
	for _, t := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected} {
		if c := apimeta.FindStatusCondition(conds, t); c != nil && c.Status != metav1.ConditionTrue && c.Reason != v1alpha1.ReasonSecondary {
			return c.Reason
		}
	}
	return ""
}

// firstToSee orders PVCs as a person wants to see them: held back first, then the least
// recently synced, a PVC never synced before any that synced.
func firstToSee(a, b v1alpha1.PVCSyncSummary) int {
	if (a.Reason != "") != (b.Reason != "") {
		if a.Reason != "" {
			return -1
		}
		return 1
	}
	switch {
	case a.LastSyncTime == nil && b.LastSyncTime == nil:
		return 0
	case a.LastSyncTime == nil:
		return -1
	case b.LastSyncTime == nil:
		return 1
	}
	return a.LastSyncTime.Compare(b.LastSyncTime.Time)
}

// withPVCsOf keeps the PVC list of the group's previous summary when nothing else in the
// summary changed. The hub writes the DRPlacementControl's status only when it changes, and a
// group's summary changes when its last group sync does (its least recently synced PVC
// synced), its state, conditions or number of PVCs: so the list, refreshed only then, adds no
// status write, where refreshing it at each PVC's sync would write the status once per PVC
// and interval. A PVC's time in the list then lags its own by less than an interval and is
// never older than the group's last sync. A PVC that turns unprotected, or protected again,
// changes the group's conditions (or their count of PVCs held back), so it is shown at once.
func withPVCsOf(prev, next v1alpha1.VRGSummary) v1alpha1.VRGSummary {
	a, b := prev, next
	a.PVCs, b.PVCs = nil, nil
	if equality.Semantic.DeepEqual(a, b) {
		next.PVCs = prev.PVCs
	}
	return next
}
