package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// StatusOptions are the options of `drover status`.
type StatusOptions struct {
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
func (o *StatusOptions) Validate() error {
	if err := checkOutput(o.Output, OutputWide, OutputName, OutputJSON, OutputYAML); err != nil {
		return err
	}
	if o.App != "" && o.AllNamespaces {
		return Usage(errors.New("APP names one DRPlacementControl: drop -A and name its namespace with -n"))
	}
	return nil
}

func now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// Status prints the protected applications: a table of them, or for one APP the table, its
// conditions and its groups; with Output json or yaml, the DRPlacementControls as Kubernetes
// objects (a List, or the object for one APP); with name, kind.group/name lines.
func Status(ctx context.Context, c client.Reader, w io.Writer, o StatusOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	apps, _, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return err
	}
	if len(apps) == 0 && !structured(o.Output) {
		where := "namespace " + o.Namespace
		if o.AllNamespaces {
			where = "any namespace"
		}
		fmt.Fprintf(w, "No DRPlacementControls in %s.\n", where)
		return nil
	}
	return printStatus(w, apps, o, now(o.Now))
}

// printStatus prints the applications loaded in the format of o.Output.
func printStatus(w io.Writer, apps []*app, o StatusOptions, t time.Time) error {
	switch {
	case structured(o.Output):
		return printStatusObjects(w, apps, o.App != "", o.Output)
	case o.Output == OutputName:
		names := make([]string, 0, len(apps))
		for _, a := range apps {
			names = append(names, a.drpc.Name)
		}
		return writeNames(w, "DRPlacementControl", names)
	}
	rows := make([]statusRow, 0, len(apps))
	for _, a := range apps {
		rows = append(rows, rowOf(a.drpc, a.interval, t))
	}
	printTable(w, rows, tableColumns{namespace: o.AllNamespaces, wide: o.Output == OutputWide, header: true})
	if o.App != "" {
		printDetails(w, apps[0], t)
	}
	return nil
}

// loadStatusApps reads the DRPlacementControl APP, or those of the namespace (every namespace
// with AllNamespaces) sorted by namespace and name, each with its policy; and the resource
// version of the read, from which a watch misses no change.
func loadStatusApps(ctx context.Context, c client.Reader, o *StatusOptions) ([]*app, string, error) {
	if o.App != "" {
		a, err := loadApp(ctx, c, o.Namespace, o.App)
		if err != nil {
			return nil, "", err
		}
		return []*app{a}, a.drpc.ResourceVersion, nil
	}
	list := &v1alpha1.DRPlacementControlList{}
	opts := []client.ListOption{}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, "", readError("DRPlacementControls", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	policies := map[string]*v1alpha1.DRPolicy{}
	apps := make([]*app, 0, len(list.Items))
	for i := range list.Items {
		a := &app{drpc: &list.Items[i]}
		if err := a.loadPolicy(ctx, c, policies); err != nil {
			return nil, "", err
		}
		apps = append(apps, a)
	}
	return apps, list.ResourceVersion, nil
}

// printStatusObjects prints the DRPlacementControls as Kubernetes objects: one object for one
// APP, else a List, as kubectl get -o json|yaml does.
func printStatusObjects(w io.Writer, apps []*app, one bool, format string) error {
	items := make([]*v1alpha1.DRPlacementControl, 0, len(apps))
	for _, a := range apps {
		items = append(items, asObject(a.drpc))
	}
	if !one {
		return printList(w, items, format)
	}
	return writeStructured(w, format, items[0])
}

// asObject is a copy of the DRPlacementControl as kubectl prints it: with its kind and
// apiVersion, without its managed fields.
func asObject(d *v1alpha1.DRPlacementControl) *v1alpha1.DRPlacementControl {
	d = d.DeepCopy()
	d.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControl"))
	d.ManagedFields = nil
	return d
}

// statusRow is one line of the status table.
type statusRow struct {
	Namespace, App, Phase, Primary, PeerReady, Protected, LastSync, RPOLag, Progression string
	// Problem is "Validated: <reason>" or "ActionAccepted: <reason>" while the hub does not act
	// on the spec or refuses its action; "-" otherwise.
	Problem string
	// Policy and Asked are the wide columns: the DRPolicy and the action the spec asks for.
	Policy, Asked string
}

// rowOf computes the table line of a DRPlacementControl at now; interval 0 means unknown.
func rowOf(d *v1alpha1.DRPlacementControl, interval time.Duration, now time.Time) statusRow {
	r := statusRow{
		Namespace: d.Namespace, App: d.Name, Phase: dash(string(d.Status.Phase)), Primary: dash(d.Status.CurrentPrimary),
		PeerReady: condStatus(d.Status.Conditions, v1alpha1.ConditionPeerReady),
		Protected: condStatus(d.Status.Conditions, v1alpha1.ConditionProtected),
		LastSync:  "-", RPOLag: "-", Progression: dash(d.Status.Progression), Problem: "-",
		Policy: dash(d.Spec.DRPolicyRef.Name), Asked: asked(d),
	}
	if c := problem(d); c != nil {
		r.Problem = c.Type + ": " + c.Reason
	}
	if t := lastSync(d); t != nil {
		lag := now.Sub(t.Time)
		r.LastSync = age(lag) + " ago"
		r.RPOLag = rpoLag(lag, interval, d.Status.SyncRefreshInterval)
	}
	return r
}

// rpoLag is the time since the last sync against the policy's interval: "8s/10s", and STALE
// past twice the interval plus the storage's status refresh (where the hub's Protected turns
// False with SyncStale, v1alpha1.SyncStaleAfter).
func rpoLag(lag, interval time.Duration, refresh *metav1.Duration) string {
	if interval <= 0 {
		return age(lag) + "/?"
	}
	s := age(lag) + "/" + age(interval)
	if lag > v1alpha1.SyncStaleAfter(interval, refresh) {
		s += " STALE"
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) }

// tableColumns are the status table's optional parts: the namespace column (-A), the wide
// columns (-o wide) and the header line (left out of the rows a watch prints after the first).
type tableColumns struct{ namespace, wide, header bool }

func printTable(w io.Writer, rows []statusRow, cols tableColumns) {
	tw := newTabWriter(w)
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
func (r statusRow) cells(cols tableColumns) []string {
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
func printDetails(w io.Writer, a *app, now time.Time) {
	d := a.drpc
	fmt.Fprintln(w)
	if !reported(d) {
		fmt.Fprintf(w, "The hub has not reported on %s/%s yet (its status is empty): %s\n", d.Namespace, d.Name, hubHint)
		return
	}
	policy := d.Spec.DRPolicyRef.Name
	if a.policy == nil {
		policy += " (not found)"
	} else {
		policy += fmt.Sprintf(" (clusters %s, every %s)", strings.Join(a.policy.Spec.DRClusters, " and "), a.policy.Spec.SchedulingInterval)
	}
	fmt.Fprintf(w, "Policy:  %s\n", policy)
	if c := problem(d); c != nil {
		what := "The hub does not act on this DRPlacementControl"
		if c.Type == v1alpha1.ConditionActionAccepted {
			what = "The hub refuses or postpones the action asked for"
		}
		fmt.Fprintf(w, "Problem: %s (%s %s, %s): %s\n", what, c.Type, c.Status, c.Reason, c.Message)
	}
	if d.Spec.Action != v1alpha1.ActionNone {
		fmt.Fprintf(w, "Asked:   %s\n", asked(d))
	}
	if st := d.Status; st.ActionTarget != "" && st.ActionStartTime != nil && st.Phase != v1alpha1.PhaseDeployed && st.Phase != v1alpha1.PhaseDeploying {
		line := fmt.Sprintf("%s to %s, started %s", actionOf(st.Phase), st.ActionTarget, clock(st.ActionStartTime.Time))
		if st.ActionDuration != nil && !inAction(st.Phase) {
			line += ", took " + st.ActionDuration.Duration.String()
		} else {
			line += fmt.Sprintf(", running for %s", age(now.Sub(st.ActionStartTime.Time)))
		}
		fmt.Fprintf(w, "Action:  %s\n", line)
	}
	fmt.Fprintln(w, "\nConditions:")
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range d.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(now.Sub(c.LastTransitionTime.Time)), c.Message)
	}
	_ = tw.Flush()
	printGroups(w, a, now)
}

// printGroups prints the hub's summary of each cluster's group, then what any condition of a
// group that is not True says.
func printGroups(w io.Writer, a *app, now time.Time) {
	d := a.drpc
	fmt.Fprintln(w, "\nClusters:")
	if len(d.Status.VRGs) == 0 {
		fmt.Fprintln(w, "  no VolumeReplicationGroup reported yet")
		return
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "  CLUSTER\tREACHABLE\tASKED\tSTATE\tDATA READY\tDATA PROTECTED\tLAST SYNC")
	var notes []string
	for _, s := range d.Status.VRGs {
		reach := "-"
		if a.clusters != nil {
			if ok, why := a.reachability(s.Cluster); ok {
				reach = "True"
			} else {
				reach = "False"
				notes = append(notes, fmt.Sprintf("  %s: %s", s.Cluster, why))
			}
		}
		last := "-"
		if s.LastGroupSyncTime != nil {
			last = age(now.Sub(s.LastGroupSyncTime.Time)) + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Cluster, reach, dash(string(s.ReplicationState)), dash(string(s.State)),
			dash(string(s.DataReady)), dash(string(s.DataProtected)), last)
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
func printPVCs(w io.Writer, a *app, now time.Time) {
	var lines, notes []string
	for _, s := range a.drpc.Status.VRGs {
		for _, p := range s.PVCs {
			last, took := "not synced yet", "-"
			if p.LastSyncTime != nil {
				last = rpoLag(now.Sub(p.LastSyncTime.Time), a.interval, a.drpc.Status.SyncRefreshInterval) + " (" + clock(p.LastSyncTime.Time) + ")"
			}
			if p.LastSyncDuration != nil {
				took = p.LastSyncDuration.Duration.String()
			}
			lines = append(lines, fmt.Sprintf("  %s/%s\t%s\t%s\t%s\t%s\t%s", p.Namespace, p.Name, s.Cluster, last, took,
				dash(string(p.DataProtected)), dash(p.Reason)))
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
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "  PVC\tCLUSTER\tLAST SYNC / INTERVAL\tTOOK\tDATA PROTECTED\tREASON")
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// asked describes the action the spec asks for.
func asked(d *v1alpha1.DRPlacementControl) string {
	switch d.Spec.Action {
	case v1alpha1.ActionFailover:
		return "Failover to " + d.Spec.FailoverCluster
	case v1alpha1.ActionRelocate:
		return "Relocate to " + d.Spec.PreferredCluster
	}
	return "no action"
}

// actionOf names the action of a phase.
func actionOf(phase v1alpha1.DRPCPhase) string {
	switch phase {
	case v1alpha1.PhaseFailingOver, v1alpha1.PhaseFailedOver:
		return "Failover"
	case v1alpha1.PhaseRelocating, v1alpha1.PhaseRelocated:
		return "Relocate"
	}
	return "Deploy"
}

// conditionLine is "Type Status (Reason): message", or "Type not reported".
func conditionLine(conds []metav1.Condition, condType string) string {
	c := apimeta.FindStatusCondition(conds, condType)
	if c == nil {
		return condType + " not reported"
	}
	return fmt.Sprintf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
}
