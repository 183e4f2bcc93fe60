package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// Options are the options of `drover status`.
type Options struct {
	// Namespace of the DRPlacementControls; ignored with AllNamespaces.
	Namespace string
	// AllNamespaces lists the DRPlacementControls of every namespace.
	AllNamespaces bool
	// App names one DRPlacementControl; empty lists them all.
	App string
	// Output is "" (a table), wide (with the policy and the action asked), name, json, yaml or
	// jsonpath=TEMPLATE.
	Output string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options that do not need the cluster.
func (o *Options) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputWide, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if o.App != "" && o.AllNamespaces {
		return cli.Usage(errors.New("APP names one DRPlacementControl: drop -A and name its namespace with -n"))
	}
	return nil
}

// Status prints the protected applications: a table of them, or for one APP the table, its
// conditions and its groups; with Output json or yaml, the DRPlacementControls as Kubernetes
// objects (a List, or the object for one APP); with name, kind.group/name lines.
func Status(ctx context.Context, c client.Reader, w io.Writer, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	apps, _, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return err
	}
	if len(apps) == 0 && !cli.Structured(o.Output) {
		where := "namespace " + o.Namespace
		if o.AllNamespaces {
			where = "any namespace"
		}
		fmt.Fprintf(w, "No DRPlacementControls in %s.\n", where)
		return nil
	}
	return printStatus(w, apps, o, cli.Now(o.Now))
}

// printStatus prints the applications loaded in the format of o.Output.
func printStatus(w io.Writer, apps []*cli.App, o Options, t time.Time) error {
	switch {
	case cli.Structured(o.Output):
		return printStatusObjects(w, apps, o.App != "", o.Output)
	case o.Output == cli.OutputName:
		names := make([]string, 0, len(apps))
		for _, a := range apps {
			names = append(names, a.DRPC.Name)
		}
		return cli.WriteNames(w, "DRPlacementControl", names)
	}
	rows := make([]Row, 0, len(apps))
	for _, a := range apps {
		rows = append(rows, rowOf(a.DRPC, a.Interval, t))
	}
	printTable(w, rows, tableColumns{namespace: o.AllNamespaces, wide: o.Output == cli.OutputWide, header: true})
	if o.App != "" {
		printDetails(w, apps[0], t)
	}
	return nil
}

// loadStatusApps reads the DRPlacementControl APP, or those of the namespace (every namespace
// with AllNamespaces) sorted by namespace and name, each with its policy; and the resource
// version of the read, from which a watch misses no change.
func loadStatusApps(ctx context.Context, c client.Reader, o *Options) ([]*cli.App, string, error) {
	if o.App != "" {
		a, err := cli.LoadApp(ctx, c, o.Namespace, o.App)
		if err != nil {
			return nil, "", err
		}
		return []*cli.App{a}, a.DRPC.ResourceVersion, nil
	}
	list := &v1alpha1.DRPlacementControlList{}
	opts := []client.ListOption{}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, "", cli.ReadError("DRPlacementControls", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	policies := map[string]*v1alpha1.DRPolicy{}
	apps := make([]*cli.App, 0, len(list.Items))
	for i := range list.Items {
		a := &cli.App{DRPC: &list.Items[i]}
		if err := a.LoadPolicy(ctx, c, policies); err != nil {
			return nil, "", err
		}
		apps = append(apps, a)
	}
	return apps, list.ResourceVersion, nil
}

// printStatusObjects prints the DRPlacementControls as Kubernetes objects: one object for one
// APP, else a List, as kubectl get -o json|yaml does.
func printStatusObjects(w io.Writer, apps []*cli.App, one bool, format string) error {
	items := make([]*v1alpha1.DRPlacementControl, 0, len(apps))
	for _, a := range apps {
		items = append(items, cli.AsObject(a.DRPC))
	}
	if !one {
		return cli.PrintList(w, items, format)
	}
	return cli.WriteStructured(w, format, items[0])
}

// Row is one line of the status table, for front ends other than the terminal (the
// dashboard) too: the same cells, computed by the same code.
type Row struct {
	Namespace, App, Phase, Primary, PeerReady, Protected, LastSync, RPOLag, Progression string
	// Problem is "Validated: <reason>" or "ActionAccepted: <reason>" while the hub does not act
	// on the spec or refuses its action; "-" otherwise.
	Problem string
	// Policy and Asked are the wide columns: the DRPolicy and the action the spec asks for.
	Policy, Asked string
}

// rowOf computes the table line of a DRPlacementControl at now; interval 0 means unknown.
func rowOf(d *v1alpha1.DRPlacementControl, interval time.Duration, now time.Time) Row {
	r := Row{
		Namespace: d.Namespace, App: d.Name, Phase: cli.Dash(string(d.Status.Phase)), Primary: cli.Dash(d.Status.CurrentPrimary),
		PeerReady: cli.CondStatus(d.Status.Conditions, v1alpha1.ConditionPeerReady),
		Protected: cli.CondStatus(d.Status.Conditions, v1alpha1.ConditionProtected),
		LastSync:  "-", RPOLag: "-", Progression: cli.Dash(d.Status.Progression), Problem: "-",
		Policy: cli.Dash(d.Spec.DRPolicyRef.Name), Asked: cli.Asked(d),
	}
	if c := cli.Problem(d); c != nil {
		r.Problem = c.Type + ": " + c.Reason
	}
	if t := cli.LastSync(d); t != nil {
		lag := now.Sub(t.Time)
		r.LastSync = cli.Age(lag) + " ago"
		r.RPOLag = rpoLag(lag, interval, d.Status.SyncRefreshInterval)
	}
	return r
}

// rpoLag is the time since the last sync against the policy's interval: "8s/10s", and STALE
// past twice the interval plus the storage's status refresh (where the hub's Protected turns
// False with SyncStale, v1alpha1.SyncStaleAfter).
func rpoLag(lag, interval time.Duration, refresh *metav1.Duration) string {
	if interval <= 0 {
		return cli.Age(lag) + "/?"
	}
	s := cli.Age(lag) + "/" + cli.Age(interval)
	if lag > v1alpha1.SyncStaleAfter(interval, refresh) {
		s += " STALE"
	}
	return s
}

// tableColumns are the status table's optional parts: the namespace column (-A), the wide
// columns (-o wide) and the header line (left out of the rows a watch prints after the first).
type tableColumns struct{ namespace, wide, header bool }

func printTable(w io.Writer, rows []Row, cols tableColumns) {
	tw := cli.NewTabWriter(w)
	if cols.header {
		fmt.Fprintln(tw, strings.Join(headerCells(cols), "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(cols), "\t"))
	}
	_ = tw.Flush()
}

// headerCells are the status table's column titles.
func headerCells(cols tableColumns) []string {
	h := []string{"APP", "PHASE", "PRIMARY", "PEER READY", "PROTECTED", "LAST SYNC", "RPO LAG", "PROGRESSION", "PROBLEM"}
	if cols.namespace {
		h = append([]string{"NAMESPACE"}, h...)
	}
	if cols.wide {
		h = append(h, "POLICY", "ASKED")
	}
	return h
}

// cells are the row's cells under headerCells(cols).
func (r Row) cells(cols tableColumns) []string {
	c := []string{r.App, r.Phase, r.Primary, r.PeerReady, r.Protected, r.LastSync, r.RPOLag, r.Progression, r.Problem}
	if cols.namespace {
		c = append([]string{r.Namespace}, c...)
	}
	if cols.wide {
		c = append(c, r.Policy, r.Asked)
	}
	return c
}

// printDetails prints one application's policy, action, conditions and groups.
func printDetails(w io.Writer, a *cli.App, now time.Time) {
	d := a.DRPC
	fmt.Fprintln(w)
	if !cli.Reported(d) {
		fmt.Fprintf(w, "The hub has not reported on %s/%s yet (its status is empty): %s\n", d.Namespace, d.Name, cli.HubHint)
		return
	}
	policy := d.Spec.DRPolicyRef.Name
	if a.Policy == nil {
		policy += " (not found)"
	} else {
		policy += fmt.Sprintf(" (clusters %s, every %s)", strings.Join(a.Policy.Spec.DRClusters, " and "), a.Policy.Spec.SchedulingInterval)
	}
	fmt.Fprintf(w, "Policy:  %s\n", policy)
	if c := cli.Problem(d); c != nil {
		what := "The hub does not act on this DRPlacementControl"
		if c.Type == v1alpha1.ConditionActionAccepted {
			what = "The hub refuses or postpones the action asked for"
		}
		fmt.Fprintf(w, "Problem: %s (%s %s, %s): %s\n", what, c.Type, c.Status, c.Reason, c.Message)
	}
	if d.Spec.Action != v1alpha1.ActionNone {
		fmt.Fprintf(w, "Asked:   %s\n", cli.Asked(d))
	}
	if st := d.Status; st.ActionTarget != "" && st.ActionStartTime != nil && st.Phase != v1alpha1.PhaseDeployed && st.Phase != v1alpha1.PhaseDeploying {
		line := fmt.Sprintf("%s to %s, started %s", cli.ActionOf(st.Phase), st.ActionTarget, cli.Clock(st.ActionStartTime.Time))
		if st.ActionDuration != nil && !cli.InAction(st.Phase) {
			line += ", took " + st.ActionDuration.Duration.String()
		} else {
			line += fmt.Sprintf(", running for %s", cli.Age(now.Sub(st.ActionStartTime.Time)))
		}
		fmt.Fprintf(w, "Action:  %s\n", line)
	}
	fmt.Fprintln(w, "\nConditions:")
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range d.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, cli.Age(now.Sub(c.LastTransitionTime.Time)), c.Message)
	}
	_ = tw.Flush()
	printGroups(w, a, now)
	printHooks(w, d)
}

// printGroups prints the hub's summary of each cluster's group, then what any condition of a
// group that is not True says.
func printGroups(w io.Writer, a *cli.App, now time.Time) {
	d := a.DRPC
	fmt.Fprintln(w, "\nClusters:")
	if len(d.Status.VRGs) == 0 {
		fmt.Fprintln(w, "  no VolumeReplicationGroup reported yet")
		return
	}
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "  CLUSTER\tREACHABLE\tASKED\tSTATE\tDATA READY\tDATA PROTECTED\tLAST SYNC")
	var notes []string
	for _, s := range d.Status.VRGs {
		reach := "-"
		if a.Clusters != nil {
			if ok, why := a.Reachability(s.Cluster); ok {
				reach = "True"
			} else {
				reach = "False"
				notes = append(notes, fmt.Sprintf("  %s: %s", s.Cluster, why))
			}
		}
		last := "-"
		if s.LastGroupSyncTime != nil {
			last = cli.Age(now.Sub(s.LastGroupSyncTime.Time)) + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Cluster, reach, cli.Dash(string(s.ReplicationState)), cli.Dash(string(s.State)),
			cli.Dash(string(s.DataReady)), cli.Dash(string(s.DataProtected)), last)
		for _, c := range s.Problems {
			notes = append(notes, fmt.Sprintf("  %s: %s %s (%s): %s", s.Cluster, c.Type, c.Status, c.Reason, c.Message))
		}
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	printPVCs(w, a, now)
}

// printPVCs prints the PVCs the hub lists for each group with their last sync against the
// policy's interval (as RPO LAG is shown), and what holds a PVC back; nothing when no group
// lists any.
func printPVCs(w io.Writer, a *cli.App, now time.Time) {
	var lines, notes []string
	for _, s := range a.DRPC.Status.VRGs {
		for _, p := range s.PVCs {
			last, took := "not synced yet", "-"
			if p.LastSyncTime != nil {
				last = rpoLag(now.Sub(p.LastSyncTime.Time), a.Interval, a.DRPC.Status.SyncRefreshInterval) + " (" + cli.Clock(p.LastSyncTime.Time) + ")"
			}
			if p.LastSyncDuration != nil {
				took = p.LastSyncDuration.Duration.String()
			}
			lines = append(lines, fmt.Sprintf("  %s/%s\t%s\t%s\t%s\t%s\t%s", p.Namespace, p.Name, s.Cluster, last, took,
				cli.Dash(string(p.DataProtected)), cli.Dash(p.Reason)))
		}
		if s.ProtectedPVCs != nil && len(s.PVCs) >= v1alpha1.MaxPVCSummaries && int(*s.ProtectedPVCs) > len(s.PVCs) {
			notes = append(notes, fmt.Sprintf("  %s: %d of its %d PVCs listed (not protected first, then the least recently synced); "+
				"its VolumeReplicationGroup's status.protectedPVCs lists them all", s.Cluster, len(s.PVCs), *s.ProtectedPVCs))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPVCs:")
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "  PVC\tCLUSTER\tLAST SYNC / INTERVAL\tTOOK\tDATA PROTECTED\tREASON")
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// AppView is one application as `drover status` judges it: the application, its line and the
// age of its recovery point.
type AppView struct {
	cli.App
	Row Row
	// Lag is the time since the last sync; negative when no sync is recorded.
	Lag time.Duration
}

// LoadAppViews reads the applications that o selects (as Status does) and judges each at now.
func LoadAppViews(ctx context.Context, c client.Reader, o Options) ([]AppView, error) {
	apps, _, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return nil, err
	}
	t := cli.Now(o.Now)
	out := make([]AppView, 0, len(apps))
	for _, a := range apps {
		out = append(out, viewOf(a, t))
	}
	return out, nil
}

// LoadAppView reads one application with its policy and clusters, judged at t.
func LoadAppView(ctx context.Context, c client.Reader, namespace, name string, t time.Time) (AppView, error) {
	a, err := cli.LoadApp(ctx, c, namespace, name)
	if err != nil {
		return AppView{}, err
	}
	return viewOf(a, t), nil
}

func viewOf(a *cli.App, t time.Time) AppView {
	v := AppView{App: *a, Row: rowOf(a.DRPC, a.Interval, t), Lag: -1}
	if s := cli.LastSync(a.DRPC); s != nil {
		v.Lag = t.Sub(s.Time)
	}
	return v
}
