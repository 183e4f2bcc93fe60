package hubless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// StatusOptions are drover status --cluster-kubeconfig's.
type StatusOptions struct {
	// App is the application (its DRPlacementControl's name, its groups' name); empty lists
	// every group of the namespace (of every namespace with AllNamespaces).
	App string
	// Namespace is -n; empty: each kubeconfig context's, else "default".
	Namespace     string
	AllNamespaces bool
	// Clusters are the --cluster-kubeconfig values.
	Clusters []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// groupRow is one group read from one cluster.
type groupRow struct {
	cluster string
	vrg     *v1alpha1.VolumeReplicationGroup
}

// Status prints the application's VolumeReplicationGroups read from each managed cluster
// directly, with no hub: role asked and held, action, DataReady, DataProtected, last sync and
// its lag against the group's interval, then what each condition that is not True says, each
// PVC's last sync and any mark of a promotion made without the hub. A cluster that does not
// answer is printed as such; it fails (exit 6) only when none answers.
func Status(ctx context.Context, w io.Writer, o StatusOptions) error {
	clusters, err := ParseClusters(o.Clusters)
	if err != nil {
		return err
	}
	now := cli.Now(o.Now)
	var rows []groupRow
	var failed []string
	for _, c := range clusters {
		got, err := readGroups(ctx, c, o)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", c.Name, err))
			continue
		}
		rows = append(rows, got...)
	}
	printRows(w, rows, now)
	for _, f := range failed {
		fmt.Fprintf(w, "\nnot read: %s\n", f)
	}
	for _, r := range rows {
		printGroupDetails(w, r, now)
	}
	if len(failed) == len(clusters) {
		return cli.Unreachable(errors.New("no managed cluster answered: " + strings.Join(failed, "; ")))
	}
	if o.App != "" && len(rows) == 0 {
		return fmt.Errorf("no VolumeReplicationGroup %s on %s: the hub names an application's groups after its DRPlacementControl, in its namespace (-n)",
			o.App, clusterNames(clusters))
	}
	return nil
}

// readGroups reads the application's group (or every group of the namespace) on one cluster.
func readGroups(ctx context.Context, c Cluster, o StatusOptions) ([]groupRow, error) {
	cl, ns, err := c.Client(o.Namespace)
	if err != nil {
		return nil, err
	}
	if o.App != "" {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.App}, vrg); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return nil, nil
			}
			return nil, fmt.Errorf("failed to read VolumeReplicationGroup %s/%s: %w", ns, o.App, err)
		}
		return []groupRow{{cluster: c.Name, vrg: vrg}}, nil
	}
	list := &v1alpha1.VolumeReplicationGroupList{}
	opts := []client.ListOption{client.InNamespace(ns)}
	if o.AllNamespaces {
		opts = nil
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("failed to list VolumeReplicationGroups: %w", err)
	}
	out := make([]groupRow, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, groupRow{cluster: c.Name, vrg: &list.Items[i]})
	}
	return out, nil
}

// printRows prints one line per group.
func printRows(w io.Writer, rows []groupRow, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No VolumeReplicationGroup found.")
		return
	}
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "CLUSTER\tNAMESPACE\tNAME\tASKED\tSTATE\tACTION\tDATA READY\tDATA PROTECTED\tLAST SYNC\tRPO LAG")
	for _, r := range rows {
		v := r.vrg
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.cluster, v.Namespace, v.Name, cli.Dash(string(v.Spec.ReplicationState)),
			cli.Dash(string(v.Status.State)), cli.Dash(string(v.Spec.Action)), condStatus(v, v1alpha1.ConditionDataReady),
			condStatus(v, v1alpha1.ConditionDataProtected), syncAge(v.Status.LastGroupSyncTime, now), Lag(v, now))
	}
	_ = tw.Flush()
}

// printGroupDetails prints a group's conditions that are not True, its mark and its PVCs.
func printGroupDetails(w io.Writer, r groupRow, now time.Time) {
	v := r.vrg
	var lines []string
	if mark, err := v1alpha1.PromotedWithoutHubMark(v); err != nil {
		lines = append(lines, "  "+err.Error())
	} else if mark != nil {
		lines = append(lines, fmt.Sprintf("  promoted without the hub at %s (recovery point %s): a hub with an older status does not act on it",
			cli.Clock(mark.At.Time), syncClock(mark.LastGroupSyncTime)))
	}
	if v.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary {
		if bound, ok := LossBound(v, now); ok {
			lines = append(lines, fmt.Sprintf("  a failover to %s loses the %s", r.cluster, bound))
		} else {
			lines = append(lines, fmt.Sprintf("  the loss of a failover to %s is %s", r.cluster, bound))
		}
	}
	if v.Status.ObservedGeneration != v.Generation {
		lines = append(lines, fmt.Sprintf("  the agent has not acted on the group's current spec yet (generation %d, observed %d)", v.Generation, v.Status.ObservedGeneration))
	}
	for _, c := range v.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			lines = append(lines, fmt.Sprintf("  %s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, p := range v.Status.ProtectedPVCs {
		lines = append(lines, fmt.Sprintf("  PVC %s/%s: last sync %s", p.Namespace, p.Name, syncAge(p.LastSyncTime, now)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s on %s:\n%s\n", client.ObjectKeyFromObject(v), r.cluster, strings.Join(lines, "\n"))
}

// Lag is the group's RPO lag: the age of its last sync over its interval, STALE past the time
// after which the hub calls it stale (v1alpha1.SyncStaleAfter); "-" for a group that reports
// no sync (a secondary) or no interval.
func Lag(v *v1alpha1.VolumeReplicationGroup, now time.Time) string {
	interval, err := v.Spec.SchedulingInterval.Duration()
	if v.Status.LastGroupSyncTime == nil || err != nil || interval <= 0 {
		return "-"
	}
	lag := now.Sub(v.Status.LastGroupSyncTime.Time)
	out := fmt.Sprintf("%.1fx", lag.Seconds()/interval.Seconds())
	if lag > v1alpha1.SyncStaleAfter(interval, v.Status.SyncRefreshInterval) {
		out += " STALE"
	}
	return out
}

// condStatus is a group's condition's status at its current generation, "-" when not judged.
func condStatus(v *v1alpha1.VolumeReplicationGroup, condType string) string {
	c := apimeta.FindStatusCondition(v.Status.Conditions, condType)
	if c == nil || c.ObservedGeneration != v.Generation {
		return "-"
	}
	return string(c.Status)
}

func syncAge(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return cli.Age(now.Sub(t.Time)) + " ago"
}

func syncClock(t *metav1.Time) string {
	if t == nil {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

func clusterNames(clusters []Cluster) string {
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
