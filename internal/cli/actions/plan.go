package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
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
	Checks     []cli.Check
	Steps      []string
	// RecipeName is the DRRecipe the application names; Recipe its hooks and groups in the
	// order the action runs them (recipeSteps).
	RecipeName string
	Recipe     []string
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
func (p *Preview) Warnings() []cli.Check {
	var out []cli.Check
	for _, c := range p.Checks {
		if !c.Blocking && !c.Met {
			out = append(out, c)
		}
	}
	return out
}

// Validate checks the options that do not need the cluster.
func (o *PlanOptions) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	return validateAction(o.Action, o.App, o.To)
}

func validateAction(action v1alpha1.DRAction, app, to string) error {
	if action != v1alpha1.ActionFailover && action != v1alpha1.ActionRelocate {
		return cli.Usage(fmt.Errorf("unknown action %q: use failover or relocate", action))
	}
	if app == "" {
		return cli.Usage(errors.New("name the application: the DRPlacementControl's name"))
	}
	if to == "" {
		return cli.Usage(errors.New("name the cluster to move the application to with --to"))
	}
	return nil
}

// Plan prints what an action would do now, changing nothing: its preconditions, the hub's
// steps and the expected data loss.
func Plan(ctx context.Context, c client.Reader, w io.Writer, o PlanOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	a, err := cli.LoadApp(ctx, c, o.Namespace, o.App)
	if err != nil {
		return err
	}
	p := preview(a, o.Action, o.To, cli.Now(o.Now))
	if err := p.addRecipe(ctx, c, a); err != nil {
		return err
	}
	switch {
	case o.Output == cli.OutputName:
		return cli.WriteNames(w, "DRPlacementControl", []string{p.App})
	case cli.Structured(o.Output):
		return cli.WriteStructured(w, o.Output, reportOf(&p))
	}
	printPreview(w, &p, a)
	return nil
}

// preview computes what action to the cluster to would do now.
func preview(a *cli.App, action v1alpha1.DRAction, to string, now time.Time) Preview {
	d := a.DRPC
	st := d.Status
	p := Preview{Action: action, Namespace: d.Namespace, App: d.Name, From: st.CurrentPrimary, To: to}
	switch {
	case cli.Settled(st.Phase) && st.CurrentPrimary == to:
		p.Noop, p.NoopReason = true, fmt.Sprintf("the application already runs on %s (phase %s)", to, st.Phase)
	case st.Phase == cli.ActivePhase(action) && st.ActionTarget == to:
		p.Noop, p.NoopReason = true, fmt.Sprintf("a %s to %s is already in progress (step %s)", strings.ToLower(string(action)), to, cli.Dash(st.Progression))
	}
	p.Checks = cli.Checks(a, action, to, now)
	p.Steps = steps(a, action, to)
	p.Loss = loss(a, action, now)
	return p
}

// addRecipe adds what the application's DRRecipe runs in the action; a recipe that does not
// exist is said in its place (the hub does not act until it does).
func (p *Preview) addRecipe(ctx context.Context, c client.Reader, a *cli.App) error {
	if a.DRPC.Spec.RecipeRef == nil || p.Noop {
		return nil
	}
	p.RecipeName = a.DRPC.Spec.RecipeRef.Name
	recipe, missing, err := loadRecipe(ctx, c, a.DRPC)
	switch {
	case err != nil:
		return err
	case missing != "":
		p.Recipe = []string{missing}
		return nil
	}
	from := p.From
	if from == "" || from == p.To {
		from = a.PeerOf(p.To)
	}
	p.Recipe = recipeSteps(a, recipe, p.Action, cli.Dash(from), p.To)
	return nil
}

// settledPhase is the phase an action ends in.
func settledPhase(action v1alpha1.DRAction) v1alpha1.DRPCPhase {
	if action == v1alpha1.ActionRelocate {
		return v1alpha1.PhaseRelocated
	}
	return v1alpha1.PhaseFailedOver
}

// steps are the hub's steps (internal/hub/drpc/machine.go), with the progression each shows.
func steps(a *cli.App, action v1alpha1.DRAction, to string) []string {
	d := a.DRPC
	from := cli.Dash(d.Status.CurrentPrimary)
	if from == to || from == "-" {
		from = cli.Dash(a.PeerOf(to))
	}
	place := fmt.Sprintf("place the application on %s: the PlacementDecision of %s names %s, for the GitOps tool to deploy it", to, placementName(d), to)
	stop := fmt.Sprintf("stop the application on %s: the PlacementDecision of %s names no cluster, the GitOps tool removes it", from, placementName(d))
	if d.Spec.PlacementRef == nil {
		place = fmt.Sprintf("start the application on %s: its agent restores the captured Kubernetes objects once the PVCs are bound, workloads last", to)
		if cli.ObjectsOnly(d) {
			place = fmt.Sprintf("start the application on %s: its agent restores the captured Kubernetes objects, workloads last", to)
		}
		stop = fmt.Sprintf("stop the application on %s: its agent deletes the workloads of %s (PVCs stay)", from, strings.Join(d.Spec.ProtectedNamespaces, ", "))
	}
	promote := fmt.Sprintf("promote %s's group (PromotingTarget): restore the PVs and PVCs from the S3 store and make the volumes primary", to)
	if cli.ObjectsOnly(d) {
		promote = fmt.Sprintf("promote %s's group (PromotingTarget): no PVCs selected, it has no volume to restore", to)
	}
	if action == v1alpha1.ActionFailover {
		demote := fmt.Sprintf("demote %s's group first (action Failover: its writes since the last sync are discarded when it resyncs)", from)
		if ok, why := a.Reachability(from); !ok {
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
func loss(a *cli.App, action v1alpha1.DRAction, now time.Time) string {
	if action == v1alpha1.ActionRelocate {
		return "none: the application is stopped and a final sync carries every write before the target is promoted"
	}
	t := cli.LastSync(a.DRPC)
	switch {
	case t == nil && cli.ObjectsOnly(a.DRPC):
		return "unknown: no capture of the objects in every S3 profile is recorded; the target may hold none of them"
	case t == nil:
		return "unknown: no group sync is recorded; the target may hold no data of the application"
	}
	lag := now.Sub(t.Time).Round(time.Second)
	if lag < 0 {
		lag = 0
	}
	if cli.ObjectsOnly(a.DRPC) {
		return fmt.Sprintf("objects changed since the last capture (%s): no PVCs selected, the target restores the objects as captured at %s",
			lag, cli.Clock(t.Time))
	}
	s := fmt.Sprintf("up to %s of writes: those made after the last group sync at %s", lag, cli.Clock(t.Time))
	if a.Interval > 0 {
		s += fmt.Sprintf(" (the policy syncs every %s)", a.Interval)
	}
	return s
}

func printPreview(w io.Writer, p *Preview, a *cli.App) {
	policy := a.DRPC.Spec.DRPolicyRef.Name
	if a.Policy != nil {
		policy += ", every " + string(a.Policy.Spec.SchedulingInterval)
	}
	fmt.Fprintf(w, "Plan: %s %s/%s from %s to %s (DRPolicy %s)\n", strings.ToLower(string(p.Action)), p.Namespace, p.App, cli.Dash(p.From), p.To, policy)
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
	if len(p.Recipe) > 0 {
		fmt.Fprintf(w, "\nHooks and order of DRRecipe %s, as the %s runs them:\n", p.RecipeName, strings.ToLower(string(p.Action)))
		for i, s := range p.Recipe {
			fmt.Fprintf(w, "  %d. %s\n", i+1, s)
		}
	}
	fmt.Fprintf(w, "\nExpected data loss: %s\n", p.Loss)
	verb := strings.ToLower(string(p.Action))
	if err := p.Refusal(); err != nil {
		fmt.Fprintf(w, "\nVerdict: %s would be refused now: %s\n", verb, strings.TrimPrefix(err.Error(), verb+" refused: "))
		return
	}
	fmt.Fprintf(w, "\nVerdict: %s can start: drover %s %s -n %s --to %s\n", verb, verb, p.App, p.Namespace, p.To)
}
