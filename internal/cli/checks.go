package cli

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The preconditions the hub checks before it acts on a DRPlacementControl (internal/hub/drpc),
// judged from what it reports: plan and the actions refuse with them, validate reports them.

// Check is one precondition of an action. Its Name says what is checked, never whether it
// holds: it reads the same met or not (the plan prints [ok], [warn] or [NO] before it), and
// Detail states what was observed, which agrees with Met.
type Check struct {
	// Name says what is checked.
	Name string `json:"name"`
	// Met says whether it holds now.
	Met bool `json:"met"`
	// Detail says what was observed and, when not met, what to do.
	Detail string `json:"detail"`
	// Blocking: the action is refused while the check is not met. A check that does not block
	// warns.
	Blocking bool `json:"blocking"`
}

// Checks are the preconditions of action to the cluster to, in the order the hub meets them.
func Checks(a *App, action v1alpha1.DRAction, to string, now time.Time) []Check {
	d := a.DRPC
	st := d.Status
	noun := "failover"
	if action == v1alpha1.ActionRelocate {
		noun = "relocation"
	}
	cmd := fmt.Sprintf("drover status %s -n %s", d.Name, d.Namespace)
	out := []Check{HubCheck(d), ValidatedCheck(d), policyCheck(a, to), idleCheck(d, action, to)}
	from := st.CurrentPrimary
	reachTarget, why := a.Reachability(to)
	targetCheck := Check{Name: "reachability of target " + to, Met: reachTarget, Blocking: true, Detail: why}
	if !reachTarget {
		targetCheck.Detail = fmt.Sprintf("peer %s %s; the %s needs it: wait until it is reachable (`kubectl get drcluster %s`)", to, why, noun, to)
	}
	if action == v1alpha1.ActionFailover {
		out = append(out, targetCheck)
		peer := Check{Name: "PeerReady of " + to, Met: condTrue(st.Conditions, v1alpha1.ConditionPeerReady),
			Detail: ConditionLine(st.Conditions, v1alpha1.ConditionPeerReady)}
		if !peer.Met {
			peer.Detail += fmt.Sprintf("; %s may not hold the latest data", to)
		}
		return append(out, peer, recentSyncCheck(a, now))
	}
	if from != "" && from != to {
		ok, why := a.Reachability(from)
		c := Check{Name: "reachability of primary " + from, Met: ok, Blocking: true, Detail: why}
		if !ok {
			c.Detail = fmt.Sprintf("primary %s %s; a relocation needs both clusters: use failover (drover failover %s -n %s --to %s)",
				from, why, d.Name, d.Namespace, to)
		}
		out = append(out, c)
	}
	out = append(out, targetCheck)
	peer := Check{Name: "PeerReady of " + to, Met: condTrue(st.Conditions, v1alpha1.ConditionPeerReady), Blocking: true,
		Detail: ConditionLine(st.Conditions, v1alpha1.ConditionPeerReady)}
	if !peer.Met {
		peer.Detail = fmt.Sprintf("the peer is not ready (%s); wait until PeerReady is True (%s), or use failover", peer.Detail, cmd)
		if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPeerReady); c != nil && c.Reason == v1alpha1.ReasonPeerUnreachable {
			peer.Detail = fmt.Sprintf("the peer is unreachable (%s); use failover", c.Message)
		}
	}
	out = append(out, peer, protectedCheck(d, from, cmd))
	return out
}

// recentSyncCheck: the recovery point (the last group sync or, with no PVC selected, the last
// capture of the objects that every store holds) is not stale (twice the interval plus the
// storage's status refresh, v1alpha1.SyncStaleAfter), as the hub's Protected judges it. It is judged from the time rather than from Protected, which is
// Unknown while the primary is unreachable, the very case of a failover.
func recentSyncCheck(a *App, now time.Time) Check {
	c := Check{Name: "age of the last group sync"}
	what, holds := "the last group sync", "the data"
	if ObjectsOnly(a.DRPC) {
		c.Name = "age of the last capture of the objects (no PVCs selected)"
		what, holds = "the last capture", "the objects"
	}
	t := LastSync(a.DRPC)
	switch {
	case t == nil && ObjectsOnly(a.DRPC):
		c.Detail = "no capture of the objects in every S3 profile is recorded: the target may hold none of them"
	case t == nil:
		c.Detail = "no group sync is recorded: the target may hold no data of the application"
	case a.Interval == 0:
		c.Met, c.Detail = true, fmt.Sprintf("%s ago (the policy's interval is unknown)", Age(now.Sub(t.Time)))
	case now.Sub(t.Time) > v1alpha1.SyncStaleAfter(a.Interval, a.DRPC.Status.SyncRefreshInterval):
		c.Detail = fmt.Sprintf("%s ago, more than %s: the target holds %s of %s (%s)",
			Age(now.Sub(t.Time)), v1alpha1.SyncStaleAllowance(a.Interval, a.DRPC.Status.SyncRefreshInterval), holds, Clock(t.Time), what)
	default:
		c.Met, c.Detail = true, fmt.Sprintf("%s ago, within %s", Age(now.Sub(t.Time)), v1alpha1.SyncStaleAllowance(a.Interval, a.DRPC.Status.SyncRefreshInterval))
	}
	return c
}

// HubCheck is the check that the hub has reported on the application.
func HubCheck(d *v1alpha1.DRPlacementControl) Check {
	c := Check{Name: "the hub's report on the application", Met: Reported(d), Blocking: true, Detail: "phase " + Dash(string(d.Status.Phase))}
	if !c.Met {
		c.Detail = fmt.Sprintf("the hub has not reported on %s/%s (its status is empty): %s", d.Namespace, d.Name, HubHint)
	}
	return c
}

// ValidatedCheck is the check that the hub accepts the DRPlacementControl (its Validated
// condition).
func ValidatedCheck(d *v1alpha1.DRPlacementControl) Check {
	cond := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionValidated)
	c := Check{Name: "the hub's validation of the DRPlacementControl", Blocking: true}
	switch {
	case cond == nil:
		c.Met, c.Detail = true, "no Validated condition: nothing refuses the DRPlacementControl"
	case cond.Status == metav1.ConditionFalse:
		c.Detail = fmt.Sprintf("the hub does not accept the DRPlacementControl (%s): %s", cond.Reason, cond.Message)
	default:
		c.Met, c.Detail = true, cond.Message
	}
	return c
}

func policyCheck(a *App, to string) Check {
	name := a.DRPC.Spec.DRPolicyRef.Name
	c := Check{Name: "cluster " + to + " in DRPolicy " + name, Blocking: true}
	switch {
	case a.Policy == nil:
		c.Detail = fmt.Sprintf("DRPolicy %s does not exist on the hub: create it, or check the DRPlacementControl's drPolicyRef", name)
	case a.PeerOf(to) == "":
		c.Detail = fmt.Sprintf("%s is not a cluster of DRPolicy %s, which pairs %s: name one of those with --to",
			to, name, strings.Join(a.Policy.Spec.DRClusters, " and "))
	default:
		c.Met, c.Detail = true, "paired with "+a.PeerOf(to)
	}
	return c
}

// idleCheck: no other action runs (a failover may overtake a relocation, as the hub allows).
func idleCheck(d *v1alpha1.DRPlacementControl, action v1alpha1.DRAction, to string) Check {
	st := d.Status
	c := Check{Name: "other actions in progress", Blocking: true, Met: true, Detail: "none (phase " + Dash(string(st.Phase)) + ")"}
	running := fmt.Sprintf("a %s to %s is in progress (step %s)", strings.ToLower(ActionOf(st.Phase)), st.ActionTarget, Dash(st.Progression))
	follow := fmt.Sprintf("follow it with `drover status %s -n %s`", d.Name, d.Namespace)
	switch {
	case st.Phase == ActivePhase(action) && st.ActionTarget == to:
		c.Detail = running + "; it is this action"
	case st.Phase == v1alpha1.PhaseRelocating && action == v1alpha1.ActionFailover:
		c.Detail = running + "; a failover overtakes it"
	case InAction(st.Phase):
		c.Met, c.Detail = false, running+" and finishes first: "+follow
	case st.Phase == v1alpha1.PhaseDeploying:
		c.Met, c.Detail = false, fmt.Sprintf("the application is still being deployed (step %s): wait for phase Deployed; %s", Dash(st.Progression), follow)
	case st.Phase == v1alpha1.PhaseDeleting:
		c.Met, c.Detail = false, "the DRPlacementControl is being deleted"
	}
	return c
}

// protectedCheck: the primary's group has DataProtected (what the hub's relocation needs).
func protectedCheck(d *v1alpha1.DRPlacementControl, from, cmd string) Check {
	c := Check{Name: "DataProtected of primary " + Dash(from) + "'s group", Blocking: true}
	s := VRG(d, from)
	switch {
	case s != nil && s.DataProtected == metav1.ConditionTrue && ObjectsOnly(d):
		c.Met, c.Detail = true, "no PVCs selected: the final capture of the objects carries them"
	case s != nil && s.DataProtected == metav1.ConditionTrue:
		c.Met, c.Detail = true, "every PVC completed a sync"
	case s != nil && s.DataProtected != "":
		why := ""
		if cond := apimeta.FindStatusCondition(s.Problems, v1alpha1.ConditionDataProtected); cond != nil {
			why = fmt.Sprintf(", %s: %s", cond.Reason, cond.Message)
		}
		c.Detail = fmt.Sprintf("%s's data is not protected (DataProtected %s%s); wait for it (%s), or use failover and lose the writes since the last sync",
			from, s.DataProtected, why, cmd)
	default:
		c.Detail = fmt.Sprintf("the hub reports no DataProtected for %s's group; wait for it (%s)", Dash(from), cmd)
	}
	return c
}

func condTrue(conds []metav1.Condition, condType string) bool {
	return apimeta.IsStatusConditionTrue(conds, condType)
}
