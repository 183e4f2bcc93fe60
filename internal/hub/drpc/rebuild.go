package drpc

import (
	"errors"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
)

// A DRPlacementControl that `drover hub restore` created (annotation
// hubrecord.AnnotationRestored) is new to this hub, but its application is not: its groups
// run on the managed clusters, perhaps failed over or relocated, perhaps promoted without any
// hub. Deploying it, as a new DRPlacementControl is, would ask a primary on preferredCluster
// and a secondary on the peer: the opposite of the truth after a failover. So before its first
// step the hub rebuilds its status from the groups (hubrecord.Rebuild) and goes on from there,
// replaying no action: settled where a group is settled primary, failing over to a group
// promoted without the hub (which the 0014 rule then lets the machine adopt), waiting, and
// writing nothing, when the groups do not tell (docs/decisions/0017).

// errNotObserved stands for a cluster this reconcile did not observe.
var errNotObserved = errors.New("not observed")

// rebuild returns the state to run in place of the machine's own while a restored
// DRPlacementControl's status cannot be rebuilt yet; nil once it is rebuilt (the machine goes
// on from the status it set), or when there is nothing to rebuild.
func (r *Reconciler) rebuild(sc *scope) state {
	st := &sc.drpc.Status
	if st.Phase != "" || sc.drpc.Annotations[hubrecord.AnnotationRestored] == "" {
		return nil
	}
	var groups []hubrecord.Group
	for _, name := range sc.policy.Spec.DRClusters {
		g := hubrecord.Group{Cluster: name, Err: errNotObserved}
		if cv := sc.view(name); cv != nil {
			g.VRG, g.Err = cv.vrg, cv.err
		}
		groups = append(groups, g)
	}
	s := hubrecord.Rebuild(groups)
	switch {
	case s.None:
		return nil
	case s.Wait != "":
		sc.refuse(v1alpha1.ReasonRebuildingStatus, "restored by drover hub restore; its status is rebuilt from its groups once they tell where the application runs: "+s.Wait)
		sc.waiting = "rebuilding the status from the groups: " + s.Wait
		return r.held
	}
	st.Phase, st.CurrentPrimary, st.ActionTarget, st.ActionStartTime = s.Phase, s.Primary, s.Primary, s.ActionStart
	st.Progression = string(ProgressionCompleted)
	if s.Phase == v1alpha1.PhaseFailingOver {
		st.Progression = string(ProgressionPromotingTarget)
	}
	return nil
}
