package hubrecord

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Group is one cluster's view of an application's group, as read by the hub or the restore.
type Group struct {
	// Cluster is the DRCluster's name.
	Cluster string
	// VRG is the group; nil when the cluster has none (or did not answer).
	VRG *v1alpha1.VolumeReplicationGroup
	// Err is why the cluster did not answer; nil when it did.
	Err error
}

// State is where the groups say the application is.
type State struct {
	// Phase is the DRPlacementControl phase the groups are in: Deployed, FailedOver or
	// Relocated when settled, FailingOver when a failover made without the hub (or cut off by
	// the hub's loss) is to be finished by the hub's machine, Deploying when the first
	// deployment was under way. Empty with Wait or None.
	Phase v1alpha1.DRPCPhase
	// Primary is the cluster whose group is asked primary.
	Primary string
	// ActionStart is the start of the action that led there, where a group records it: a
	// relocation's (the peer's finalSyncRequest, so the hub asks the same one) or a failover's
	// made without the hub (its mark).
	ActionStart *metav1.Time
	// Wait says why no state can be told now; the DRPlacementControl waits and writes nothing.
	Wait string
	// None is true when no cluster holds a group and every cluster answered: nothing is
	// protected yet, the ordinary deployment runs.
	None bool
}

// Rebuild tells the state of an application from its groups: the group asked primary is where it
// runs, its action says after what, and a mark of a failover made without the hub
// (docs/decisions/0014) makes it a failover the hub finishes. It never guesses: two groups
// asked primary with no single mark to tell them apart, none primary, or none answering with a
// group wait for a person or for the clusters.
func Rebuild(groups []Group) State {
	var primaries, marked []Group
	var silent []string
	found := false
	for _, g := range groups {
		if g.Err != nil {
			silent = append(silent, fmt.Sprintf("%s does not answer (%v)", g.Cluster, g.Err))
			continue
		}
		if g.VRG == nil {
			continue
		}
		found = true
		if g.VRG.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary {
			primaries = append(primaries, g)
			if m, err := v1alpha1.PromotedWithoutHubMark(g.VRG); m != nil || err != nil {
				marked = append(marked, g)
			}
		}
	}
	switch {
	case len(primaries) == 2 && len(marked) == 1:
		return failingOver(marked[0])
	case len(primaries) == 2:
		return State{Wait: fmt.Sprintf("both groups are asked primary (%s and %s), and no single mark of a failover made without the hub tells which holds the application's data: "+
			"decide, and fail over to the one kept", primaries[0].Cluster, primaries[1].Cluster)}
	case len(primaries) == 1 && len(marked) == 1:
		return failingOver(marked[0])
	case len(primaries) == 1:
		return settled(primaries[0], groups)
	case len(silent) > 0:
		return State{Wait: strings.Join(silent, "; ") + ": the application's primary group may be there, and is not guessed"}
	case found:
		return State{Wait: "no group is asked primary (a relocation cut off between its demotion and its promotion): relocate the application to the cluster that holds its final sync"}
	}
	return State{None: true}
}

// failingOver is the state of a group promoted without the hub: the hub's failover to it.
func failingOver(g Group) State {
	s := State{Phase: v1alpha1.PhaseFailingOver, Primary: g.Cluster}
	if m, err := v1alpha1.PromotedWithoutHubMark(g.VRG); err == nil && m != nil {
		at := m.At
		s.ActionStart = &at
	}
	return s
}

// settled is the state of the one group asked primary: settled by its action once the group
// holds its role at its generation, else the action still under way.
func settled(p Group, groups []Group) State {
	v := p.VRG
	done := v.Status.State == v1alpha1.StatePrimary && v.Status.ObservedGeneration == v.Generation
	s := State{Primary: p.Cluster}
	switch v.Spec.Action {
	case v1alpha1.ActionFailover:
		s.Phase = v1alpha1.PhaseFailedOver
		if !done {
			s.Phase = v1alpha1.PhaseFailingOver
		}
	case v1alpha1.ActionRelocate:
		if !done {
			return State{Wait: fmt.Sprintf("%s's group is asked primary by a relocation that has not completed (state %s, generation %d observed %d): wait for it, then restore again",
				p.Cluster, v.Status.State, v.Generation, v.Status.ObservedGeneration)}
		}
		s.Phase = v1alpha1.PhaseRelocated
		s.ActionStart = relocationStart(p.Cluster, groups)
	default:
		s.Phase = v1alpha1.PhaseDeployed
		if !done {
			s.Phase = v1alpha1.PhaseDeploying
		}
	}
	return s
}

// relocationStart reads the start of the relocation to target from the peer's final sync
// request, relocate-TARGET-UNIX (the hub's, internal/hub/drpc); nil when no group says it.
func relocationStart(target string, groups []Group) *metav1.Time {
	prefix := "relocate-" + target + "-"
	for _, g := range groups {
		if g.VRG == nil || g.Cluster == target || !strings.HasPrefix(g.VRG.Spec.FinalSyncRequest, prefix) {
			continue
		}
		unix, err := strconv.ParseInt(strings.TrimPrefix(g.VRG.Spec.FinalSyncRequest, prefix), 10, 64)
		if err != nil {
			continue
		}
		t := metav1.NewTime(time.Unix(unix, 0))
		return &t
	}
	return nil
}

// Placement returns spec with its action fields set so that they agree with s: the hub's
// machine then starts no action on the restored DRPlacementControl. A failover (made, or to be
// finished) to X asks Failover to X; a relocation to X asks Relocate with preferredCluster X;
// a deployment on X keeps a spec that put it there, else prefers X.
func Placement(spec v1alpha1.DRPlacementControlSpec, s State) v1alpha1.DRPlacementControlSpec {
	out := *spec.DeepCopy()
	if s.Primary == "" {
		return out
	}
	switch s.Phase {
	case v1alpha1.PhaseFailedOver, v1alpha1.PhaseFailingOver:
		out.Action, out.FailoverCluster = v1alpha1.ActionFailover, s.Primary
	case v1alpha1.PhaseRelocated:
		out.Action, out.PreferredCluster = v1alpha1.ActionRelocate, s.Primary
	default:
		if (out.Action == v1alpha1.ActionFailover && out.FailoverCluster == s.Primary) || (out.Action != v1alpha1.ActionFailover && out.PreferredCluster == s.Primary) {
			return out
		}
		out.Action, out.PreferredCluster = v1alpha1.ActionNone, s.Primary
	}
	return out
}
