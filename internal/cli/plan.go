package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// PlanOptions are the options of `drover plan`.
type PlanOptions struct {
	// Namespace and App name the DRPlacementControl.
	Namespace, App string
	// Action is Failover or Relocate.
	Action v1alpha1.DRAction
	// To is the cluster to move the application to.
	To string
	// Output is "" (the plan as text), name, json, yaml or jsonpath=TEMPLATE.
	Output string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

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

// Preview is what an action would do now.
type Preview struct {
	Action    v1alpha1.DRAction
	Namespace string
	App       string
	// From is the cluster the application runs on; To the cluster it moves to.
	From, To string
	// Noop says the application already runs on To, or the action is already under way;
	// NoopReason says which.
	Noop       bool
	NoopReason string
	Checks     []Check
	Steps      []string
	// Loss is the expected data loss, for a person.
	Loss string
}

// Refusal is the first blocking check not met, as an error that says what to do; nil when the
// action may start.
func (p *Preview) Refusal() error {
	for _, c := range p.Checks {
		if c.Blocking && !c.Met {
			return fmt.Errorf("%s refused: %s", strings.ToLower(string(p.Action)), c.Detail)
		}
	}
	return nil
}

// Warnings are the checks that are not met but do not block.
func (p *Preview) Warnings() []Check {
	var out []Check
	for _, c := range p.Checks {
		if !c.Blocking && !c.Met {
			out = append(out, c)
		}
	}
	return out
}

// Validate checks the options that do not need the cluster.
func (o *PlanOptions) Validate() error {
	if err := checkOutput(o.Output, OutputName, OutputJSON, OutputYAML); err != nil {
		return err
	}
	return validateAction(o.Action, o.App, o.To)
}

func validateAction(action v1alpha1.DRAction, app, to string) error {
	if action != v1alpha1.ActionFailover && action != v1alpha1.ActionRelocate {
		return Usage(fmt.Errorf("unknown action %q: use failover or relocate", action))
	}
	if app == "" {
		return Usage(errors.New("name the application: the DRPlacementControl's name"))
	}
	if to == "" {
		return Usage(errors.New("name the cluster to move the application to with --to"))
	}
	return nil
}

// Plan prints what an action would do now, changing nothing: its preconditions, the hub's
// steps and the expected data loss.
func Plan(ctx context.Context, c client.Reader, w io.Writer, o PlanOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	a, err := loadApp(ctx, c, o.Namespace, o.App)
	if err != nil {
		return err
	}
	p := preview(a, o.Action, o.To, now(o.Now))
	switch {
	case o.Output == OutputName:
		return writeNames(w, "DRPlacementControl", []string{p.App})
	case structured(o.Output):
		return writeStructured(w, o.Output, reportOf(&p))
	}
	printPreview(w, &p, a)
	return nil
}

// preview computes what action to the cluster to would do now.
func preview(a *app, action v1alpha1.DRAction, to string, now time.Time) Preview {
	d := a.drpc
	st := d.Status
	p := Preview{Action: action, Namespace: d.Namespace, App: d.Name, From: st.CurrentPrimary, To: to}
	switch {
	case settled(st.Phase) && st.CurrentPrimary == to:
		p.Noop, p.NoopReason = true, fmt.Sprintf("the application already runs on %s (phase %s)", to, st.Phase)
	case st.Phase == activePhase(action) && st.ActionTarget == to:
		p.Noop, p.NoopReason = true, fmt.Sprintf("a %s to %s is already in progress (step %s)", strings.ToLower(string(action)), to, dash(st.Progression))
	}
	p.Checks = checks(a, action, to, now)
	p.Steps = steps(a, action, to)
	p.Loss = loss(a, action, now)
	return p
}

// activePhase is the phase of an action in progress.
func activePhase(action v1alpha1.DRAction) v1alpha1.DRPCPhase {
	if action == v1alpha1.ActionRelocate {
		return v1alpha1.PhaseRelocating
	}
	return v1alpha1.PhaseFailingOver
}

// settledPhase is the phase an action ends in.
func settledPhase(action v1alpha1.DRAction) v1alpha1.DRPCPhase {
	if action == v1alpha1.ActionRelocate {
		return v1alpha1.PhaseRelocated
	}
	return v1alpha1.PhaseFailedOver
}

// checks are the preconditions of action to the cluster to, in the order the hub meets them.
func checks(a *app, action v1alpha1.DRAction, to string, now time.Time) []Check {
	d := a.drpc
	st := d.Status
	noun := "failover"
	if action == v1alpha1.ActionRelocate {
		noun = "relocation"
	}
	cmd := fmt.Sprintf("drover status %s -n %s", d.Name, d.Namespace)
	out := []Check{hubCheck(d), validatedCheck(d), policyCheck(a, to), idleCheck(d, action, to)}
	from := st.CurrentPrimary
	reachTarget, why := a.reachability(to)
	targetCheck := Check{Name: "reachability of target " + to, Met: reachTarget, Blocking: true, Detail: why}
	if !reachTarget {
		targetCheck.Detail = fmt.Sprintf("peer %s %s; the %s needs it: wait until it is reachable (`kubectl get drcluster %s`)", to, why, noun, to)
	}
	if action == v1alpha1.ActionFailover {
		out = append(out, targetCheck)
		peer := Check{Name: "PeerReady of " + to, Met: condTrue(st.Conditions, v1alpha1.ConditionPeerReady),
			Detail: conditionLine(st.Conditions, v1alpha1.ConditionPeerReady)}
		if !peer.Met {
			peer.Detail += fmt.Sprintf("; %s may not hold the latest data", to)
		}
		return append(out, peer, recentSyncCheck(a, now))
	}
	if from != "" && from != to {
		ok, why := a.reachability(from)
		c := Check{Name: "reachability of primary " + from, Met: ok, Blocking: true, Detail: why}
		if !ok {
			c.Detail = fmt.Sprintf("primary %s %s; a relocation needs both clusters: use failover (drover failover %s -n %s --to %s)",
				from, why, d.Name, d.Namespace, to)
		}
		out = append(out, c)
	}
	out = append(out, targetCheck)
	peer := Check{Name: "PeerReady of " + to, Met: condTrue(st.Conditions, v1alpha1.ConditionPeerReady), Blocking: true,
		Detail: conditionLine(st.Conditions, v1alpha1.ConditionPeerReady)}
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
func recentSyncCheck(a *app, now time.Time) Check {
	c := Check{Name: "age of the last group sync"}
	what, holds := "the last group sync", "the data"
	if objectsOnly(a.drpc) {
		c.Name = "age of the last capture of the objects (no PVCs selected)"
		what, holds = "the last capture", "the objects"
	}
	t := lastSync(a.drpc)
	switch {
	case t == nil && objectsOnly(a.drpc):
		c.Detail = "no capture of the objects in every S3 profile is recorded: the target may hold none of them"
	case t == nil:
		c.Detail = "no group sync is recorded: the target may hold no data of the application"
	case a.interval == 0:
		c.Met, c.Detail = true, fmt.Sprintf("%s ago (the policy's interval is unknown)", age(now.Sub(t.Time)))
	case now.Sub(t.Time) > v1alpha1.SyncStaleAfter(a.interval, a.drpc.Status.SyncRefreshInterval):
		c.Detail = fmt.Sprintf("%s ago, more than %s: the target holds %s of %s (%s)",
			age(now.Sub(t.Time)), v1alpha1.SyncStaleAllowance(a.interval, a.drpc.Status.SyncRefreshInterval), holds, clock(t.Time), what)
	default:
		c.Met, c.Detail = true, fmt.Sprintf("%s ago, within %s", age(now.Sub(t.Time)), v1alpha1.SyncStaleAllowance(a.interval, a.drpc.Status.SyncRefreshInterval))
	}
	return c
}

// objectsOnly reports whether the application is protected by its captured objects alone: its
// objects are captured (self-contained mode, or kubeObjectProtection set) and the current
// primary's group protects no PVC. Its lastGroupSyncTime is then the last capture that every
// store holds.
func objectsOnly(d *v1alpha1.DRPlacementControl) bool {
	if d.Spec.PlacementRef != nil && d.Spec.KubeObjectProtection == nil {
		return false
	}
	s := vrg(d, d.Status.CurrentPrimary)
	return s != nil && s.ProtectedPVCs != nil && *s.ProtectedPVCs == 0
}

func hubCheck(d *v1alpha1.DRPlacementControl) Check {
	c := Check{Name: "the hub's report on the application", Met: reported(d), Blocking: true, Detail: "phase " + dash(string(d.Status.Phase))}
	if !c.Met {
		c.Detail = fmt.Sprintf("the hub has not reported on %s/%s (its status is empty): %s", d.Namespace, d.Name, hubHint)
	}
	return c
}

func validatedCheck(d *v1alpha1.DRPlacementControl) Check {
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

func policyCheck(a *app, to string) Check {
	name := a.drpc.Spec.DRPolicyRef.Name
	c := Check{Name: "cluster " + to + " in DRPolicy " + name, Blocking: true}
	switch {
	case a.policy == nil:
		c.Detail = fmt.Sprintf("DRPolicy %s does not exist on the hub: create it, or check the DRPlacementControl's drPolicyRef", name)
	case a.peerOf(to) == "":
		c.Detail = fmt.Sprintf("%s is not a cluster of DRPolicy %s, which pairs %s: name one of those with --to",
			to, name, strings.Join(a.policy.Spec.DRClusters, " and "))
	default:
		c.Met, c.Detail = true, "paired with "+a.peerOf(to)
	}
	return c
}

// idleCheck: no other action runs (a failover may overtake a relocation, as the hub allows).
func idleCheck(d *v1alpha1.DRPlacementControl, action v1alpha1.DRAction, to string) Check {
	st := d.Status
	c := Check{Name: "other actions in progress", Blocking: true, Met: true, Detail: "none (phase " + dash(string(st.Phase)) + ")"}
	running := fmt.Sprintf("a %s to %s is in progress (step %s)", strings.ToLower(actionOf(st.Phase)), st.ActionTarget, dash(st.Progression))
	follow := fmt.Sprintf("follow it with `drover status %s -n %s`", d.Name, d.Namespace)
	switch {
	case st.Phase == activePhase(action) && st.ActionTarget == to:
		c.Detail = running + "; it is this action"
	case st.Phase == v1alpha1.PhaseRelocating && action == v1alpha1.ActionFailover:
		c.Detail = running + "; a failover overtakes it"
	case inAction(st.Phase):
		c.Met, c.Detail = false, running+" and finishes first: "+follow
	case st.Phase == v1alpha1.PhaseDeploying:
		c.Met, c.Detail = false, fmt.Sprintf("the application is still being deployed (step %s): wait for phase Deployed; %s", dash(st.Progression), follow)
	case st.Phase == v1alpha1.PhaseDeleting:
		c.Met, c.Detail = false, "the DRPlacementControl is being deleted"
	}
	return c
}

// protectedCheck: the primary's group has DataProtected (what the hub's relocation needs).
func protectedCheck(d *v1alpha1.DRPlacementControl, from, cmd string) Check {
	c := Check{Name: "DataProtected of primary " + dash(from) + "'s group", Blocking: true}
	s := vrg(d, from)
	switch {
	case s != nil && s.DataProtected == metav1.ConditionTrue && objectsOnly(d):
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
		c.Detail = fmt.Sprintf("the hub reports no DataProtected for %s's group; wait for it (%s)", dash(from), cmd)
	}
	return c
}

func condTrue(conds []metav1.Condition, condType string) bool {
	return apimeta.IsStatusConditionTrue(conds, condType)
}

// steps are the hub's steps (internal/hub/drpc/machine.go), with the progression each shows.
func steps(a *app, action v1alpha1.DRAction, to string) []string {
	d := a.drpc
	from := dash(d.Status.CurrentPrimary)
	if from == to || from == "-" {
		from = dash(a.peerOf(to))
	}
	place := fmt.Sprintf("place the application on %s: the PlacementDecision of %s names %s, for the GitOps tool to deploy it", to, placementName(d), to)
	stop := fmt.Sprintf("stop the application on %s: the PlacementDecision of %s names no cluster, the GitOps tool removes it", from, placementName(d))
	if d.Spec.PlacementRef == nil {
		place = fmt.Sprintf("start the application on %s: its agent restores the captured Kubernetes objects once the PVCs are bound, workloads last", to)
		if objectsOnly(d) {
			place = fmt.Sprintf("start the application on %s: its agent restores the captured Kubernetes objects, workloads last", to)
		}
		stop = fmt.Sprintf("stop the application on %s: its agent deletes the workloads of %s (PVCs stay)", from, strings.Join(d.Spec.ProtectedNamespaces, ", "))
	}
	promote := fmt.Sprintf("promote %s's group (PromotingTarget): restore the PVs and PVCs from the S3 store and make the volumes primary", to)
	if objectsOnly(d) {
		promote = fmt.Sprintf("promote %s's group (PromotingTarget): no PVCs selected, it has no volume to restore", to)
	}
	if action == v1alpha1.ActionFailover {
		demote := fmt.Sprintf("demote %s's group first (action Failover: its writes since the last sync are discarded when it resyncs)", from)
		if ok, why := a.reachability(from); !ok {
			demote = fmt.Sprintf("%s is %s: its group is demoted the moment it is reachable again, before anything else happens there", from, why)
			promote += " (the storage force-promotes while " + from + " is away)"
		}
		return []string{
			demote,
			promote,
			place + " (PlacingApplication)",
			fmt.Sprintf("phase FailedOver; %s's group is demoted when it answers (DemotingOldPrimary), then PeerReady turns True", from),
		}
	}
	return []string{
		stop + " (StoppingApplication)",
		fmt.Sprintf("demote %s with a final sync (DemotingForFinalSync): its agent fences new pods, waits until nothing uses the PVCs, makes them secondary and syncs the last writes to %s", from, to),
		strings.Replace(promote, "(PromotingTarget)", "once the final sync is confirmed (PromotingTarget)", 1),
		place + " (PlacingApplication)",
		fmt.Sprintf("phase Relocated; %s's group stays secondary and receives from %s", from, to),
	}
}

func placementName(d *v1alpha1.DRPlacementControl) string {
	if d.Spec.PlacementRef == nil {
		return "-"
	}
	return d.Spec.PlacementRef.Name
}

// loss is the data an action would lose now.
func loss(a *app, action v1alpha1.DRAction, now time.Time) string {
	if action == v1alpha1.ActionRelocate {
		return "none: the application is stopped and a final sync carries every write before the target is promoted"
	}
	t := lastSync(a.drpc)
	switch {
	case t == nil && objectsOnly(a.drpc):
		return "unknown: no capture of the objects in every S3 profile is recorded; the target may hold none of them"
	case t == nil:
		return "unknown: no group sync is recorded; the target may hold no data of the application"
	}
	lag := now.Sub(t.Time).Round(time.Second)
	if lag < 0 {
		lag = 0
	}
	if objectsOnly(a.drpc) {
		return fmt.Sprintf("objects changed since the last capture (%s): no PVCs selected, the target restores the objects as captured at %s",
			lag, clock(t.Time))
	}
	s := fmt.Sprintf("up to %s of writes: those made after the last group sync at %s", lag, clock(t.Time))
	if a.interval > 0 {
		s += fmt.Sprintf(" (the policy syncs every %s)", a.interval)
	}
	return s
}

func printPreview(w io.Writer, p *Preview, a *app) {
	policy := a.drpc.Spec.DRPolicyRef.Name
	if a.policy != nil {
		policy += ", every " + string(a.policy.Spec.SchedulingInterval)
	}
	fmt.Fprintf(w, "Plan: %s %s/%s from %s to %s (DRPolicy %s)\n", strings.ToLower(string(p.Action)), p.Namespace, p.App, dash(p.From), p.To, policy)
	if p.Noop {
		fmt.Fprintf(w, "\nNothing to do: %s.\n", p.NoopReason)
		return
	}
	fmt.Fprintln(w, "\nPreconditions:")
	for _, c := range p.Checks {
		mark := "ok"
		switch {
		case !c.Met && c.Blocking:
			mark = "NO"
		case !c.Met:
			mark = "warn"
		}
		fmt.Fprintf(w, "  [%s] %s: %s\n", mark, c.Name, c.Detail)
	}
	fmt.Fprintln(w, "\nSteps the hub will take:")
	for i, s := range p.Steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	fmt.Fprintf(w, "\nExpected data loss: %s\n", p.Loss)
	verb := strings.ToLower(string(p.Action))
	if err := p.Refusal(); err != nil {
		fmt.Fprintf(w, "\nVerdict: %s would be refused now: %s\n", verb, strings.TrimPrefix(err.Error(), verb+" refused: "))
		return
	}
	fmt.Fprintf(w, "\nVerdict: %s can start: drover %s %s -n %s --to %s\n", verb, verb, p.App, p.Namespace, p.To)
}
