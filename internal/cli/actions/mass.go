package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// Defaults of the mass actions (`drover failover --all`, `drover relocate --all`).
const (
	// DefaultWorkers is how many DRPlacementControls a mass action patches at once.
	DefaultWorkers = 10
	// DefaultProgressInterval is how often a mass --wait prints a progress line.
	DefaultProgressInterval = 10 * time.Second
	// slowestShown is how many of the applications still running a progress line names.
	slowestShown = 3
)

// MassOptions are the options of a failover or relocation of every application that matches
// (`drover failover --all`, `drover relocate --all`, `drover plan failover|relocate --all`).
//
// Refusals: by default a batch with any application the hub would refuse is refused whole and
// nothing changes, so a person never moves half of a fleet by accident; with SkipRefused the
// others are asked and the refused ones are reported.
type MassOptions struct {
	// Action is Failover or Relocate.
	Action v1alpha1.DRAction
	// From selects the applications whose current primary is this cluster; required for a
	// failover (the lost cluster), optional for a relocation.
	From string
	// To is the cluster to move them to.
	To string
	// Selector is a label selector of DRPlacementControls (kubectl's syntax); empty selects all.
	Selector string
	// Namespace is where the DRPlacementControls are, unless AllNamespaces.
	Namespace     string
	AllNamespaces bool
	// SkipRefused asks for the action on the applications that may start even when others are
	// refused.
	SkipRefused bool
	// Wait follows every action until it completes, fails or Timeout passes.
	Wait bool
	// Timeout, PollInterval and StallAfter are as in ActionOptions, for the whole batch.
	Timeout, PollInterval, StallAfter time.Duration
	// ProgressInterval is how often Wait prints a progress line; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Workers bounds the concurrent patches; 0 means DefaultWorkers.
	Workers int
	// Output is "" (the plan and the summary as tables), name, json, yaml or jsonpath=TEMPLATE:
	// the plan, or with an action its summary, as a List (of Plan, of ActionResult).
	Output string
	// Log receives the plan and the progress of an action when Output prints objects; nil
	// discards them.
	Log io.Writer
	// Confirm, when set, is asked after the plan is printed and before anything is patched;
	// nil asks nothing.
	Confirm *cli.Confirmation
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options that do not need the cluster.
func (o *MassOptions) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if err := validateAction(o.Action, "--all", o.To); err != nil {
		return err
	}
	if o.Action == v1alpha1.ActionFailover && o.From == "" {
		return cli.Usage(errors.New("name the cluster to fail over from with --from: failover --all moves every application whose primary is that cluster"))
	}
	if o.From != "" && o.From == o.To {
		return cli.Usage(fmt.Errorf("--from and --to both name %s: name two clusters", o.To))
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return cli.Usage(fmt.Errorf("--selector %q is not a label selector: %w", o.Selector, err))
	}
	if o.Timeout < 0 || o.PollInterval < 0 || o.StallAfter < 0 || o.ProgressInterval < 0 || o.Workers < 0 {
		return cli.Usage(errors.New("--timeout and --workers must not be negative"))
	}
	return nil
}

// describe says which applications the options select, for messages.
func (o *MassOptions) describe() string {
	where := "namespace " + o.Namespace
	if o.AllNamespaces {
		where = "any namespace"
	}
	if o.Selector != "" {
		where += ", selector " + o.Selector
	}
	if o.From != "" {
		where += ", current primary " + o.From
	}
	return where
}

// entry is one selected application and what the action would do to it.
type entry struct {
	a *cli.App
	p Preview
}

func (e *entry) key() string { return e.a.DRPC.Namespace + "/" + e.a.DRPC.Name }

// selectApps lists the DRPlacementControls that the options select, with their policies and
// clusters, sorted by namespace and name. None is an error that says what was looked for.
func selectApps(ctx context.Context, c client.Reader, o *MassOptions) ([]*cli.App, error) {
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return nil, err
	}
	list := &v1alpha1.DRPlacementControlList{}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, cli.ReadError("DRPlacementControls", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	policies := map[string]*v1alpha1.DRPolicy{}
	clusters := map[string]*v1alpha1.DRCluster{}
	var apps []*cli.App
	for i := range list.Items {
		d := &list.Items[i]
		if o.From != "" && d.Status.CurrentPrimary != o.From {
			continue
		}
		a := &cli.App{DRPC: d, Clusters: map[string]*v1alpha1.DRCluster{}}
		if err := a.LoadPolicy(ctx, c, policies); err != nil {
			return nil, err
		}
		if err := a.LoadClusters(ctx, c, clusters); err != nil {
			return nil, err
		}
		apps = append(apps, a)
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("no DRPlacementControl matches (%s): %d in the scope before the filter; list them with `drover status -A`",
			o.describe(), len(list.Items))
	}
	return apps, nil
}

// massPreview selects the applications and previews the action on each.
func massPreview(ctx context.Context, c client.Reader, o *MassOptions) ([]*entry, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	apps, err := selectApps(ctx, c, o)
	if err != nil {
		return nil, err
	}
	t := cli.Now(o.Now)
	out := make([]*entry, 0, len(apps))
	for _, a := range apps {
		out = append(out, &entry{a: a, p: preview(a, o.Action, o.To, t)})
	}
	return out, nil
}

// verdict is what the action would do to one application, for the plan table.
func (e *entry) verdict() (string, string) {
	if e.p.Noop {
		return "nothing to do", e.p.NoopReason
	}
	verb := strings.ToLower(string(e.p.Action))
	if err := e.p.Refusal(); err != nil {
		return "refused", strings.TrimPrefix(err.Error(), verb+" refused: ")
	}
	detail := "data loss: " + strings.SplitN(e.p.Loss, ":", 2)[0]
	for _, w := range e.p.Warnings() {
		detail += "; warning: " + w.Name + ": " + w.Detail
	}
	return "can start", detail
}

// counts are the plan's verdicts.
type counts struct{ start, refused, noop int }

func countOf(entries []*entry) counts {
	var n counts
	for _, e := range entries {
		switch v, _ := e.verdict(); v {
		case "can start":
			n.start++
		case "refused":
			n.refused++
		default:
			n.noop++
		}
	}
	return n
}

// printMassPlan prints a row per application: where it runs, the verdict and why.
func printMassPlan(w io.Writer, o *MassOptions, entries []*entry) {
	verb := strings.ToLower(string(o.Action))
	fmt.Fprintf(w, "Plan: %s %d applications to %s (%s)\n\n", verb, len(entries), o.To, o.describe())
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "NAMESPACE\tAPP\tFROM\tTO\tVERDICT\tDETAIL")
	for _, e := range entries {
		v, detail := e.verdict()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.a.DRPC.Namespace, e.a.DRPC.Name, cli.Dash(e.p.From), o.To, v, detail)
	}
	_ = tw.Flush()
	n := countOf(entries)
	fmt.Fprintf(w, "\n%d can start, %d refused, %d nothing to do.\n", n.start, n.refused, n.noop)
}

// refusedBatch is the error of a batch refused whole.
func refusedBatch(o *MassOptions, n counts) error {
	verb := strings.ToLower(string(o.Action))
	return cli.Refused(fmt.Errorf("%s refused for the whole batch: %d of %d applications would be refused (listed above with the reason and what to do); "+
		"nothing was changed: fix them, narrow the batch with --selector, or add --skip-refused to %s the %d that can start",
		verb, n.refused, n.start+n.refused+n.noop, verb, n.start))
}

// PlanAll prints what a mass action would do to each application it selects, changing nothing.
func PlanAll(ctx context.Context, c client.Reader, w io.Writer, o MassOptions) error {
	entries, err := massPreview(ctx, c, &o)
	if err != nil {
		return err
	}
	if o.Output != "" {
		return printMassReports(w, &o, entries, nil)
	}
	printMassPlan(w, &o, entries)
	n := countOf(entries)
	verb := strings.ToLower(string(o.Action))
	switch {
	case n.refused > 0:
		fmt.Fprintf(w, "Verdict: %s --all would be refused as a whole now (%d refused); with --skip-refused it would ask for %d.\n", verb, n.refused, n.start)
	case n.start == 0:
		fmt.Fprintln(w, "Verdict: nothing to ask.")
	default:
		fmt.Fprintf(w, "Verdict: %s --all can start for %d applications.\n", verb, n.start)
	}
	return nil
}
