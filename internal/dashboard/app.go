package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/status"
)

// appData is one application's page.
type appData struct {
	Row       appRow
	Policy    string
	Asked     string
	Interval  string
	Conds     []condRow
	Groups    []groupRow
	PVCs      []pvcRow
	PVCNotes  []string
	Hooks     []hookRow
	Recipe    string
	Timeline  []timelineRow
	Actions   []actionLink
	Chart     *chart
	ChartNote string
	Error     string
}

type condRow struct {
	Type, Reason, Message, Age string
	Status                     state
}

// groupRow is the hub's summary of the application's group on one cluster.
type groupRow struct {
	Cluster, Asked, State, PVCs, LastSync string
	Reachable, DataReady, DataProtected   state
	Problems                              []string
}

// pvcRow is one PVC of a group with its last sync, judged against the policy's interval as
// the application's RPO lag is.
type pvcRow struct {
	Cluster, PVC, At, Took, Reason string
	LastSync, DataProtected        state
}

type timelineRow struct {
	At, What, Detail string
	at               time.Time
}

// actionLink leads to the plan of an action.
type actionLink struct{ Label, Href string }

func (s *Server) appPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	v, err := status.LoadAppView(ctx, s.c, ns, name, s.now())
	if err != nil {
		code := http.StatusNotFound
		if isForbidden(err) {
			code = http.StatusForbidden
		}
		s.render(w, r, code, "app", ns+"/"+name, false, appData{Error: readProblem("DRPlacementControl "+ns+"/"+name, err)})
		return
	}
	d := appData{Row: appRowOf(v), Policy: v.DRPC.Spec.DRPolicyRef.Name, Asked: v.Row.Asked, Interval: "unknown"}
	if v.Interval > 0 {
		d.Interval = v.Interval.String()
	}
	now := s.now()
	for _, c := range v.DRPC.Status.Conditions {
		d.Conds = append(d.Conds, condRow{Type: c.Type, Status: condState(string(c.Status)), Reason: c.Reason, Message: c.Message,
			Age: cli.Age(now.Sub(c.LastTransitionTime.Time))})
	}
	d.Groups = groupsOf(v, now)
	d.PVCs, d.PVCNotes = pvcsOf(v, now)
	d.Hooks = hooksOf(v.DRPC)
	if ref := v.DRPC.Spec.RecipeRef; ref != nil {
		d.Recipe = ref.Name
	}
	d.Timeline = s.timeline(ctx, v.DRPC)
	d.Actions = actionsOf(v)
	d.Chart, d.ChartNote = s.lagChart(ctx, v)
	s.render(w, r, http.StatusOK, "app", ns+"/"+name, true, d)
}

func groupsOf(v status.AppView, now time.Time) []groupRow {
	var out []groupRow
	for _, g := range v.DRPC.Status.VRGs {
		row := groupRow{Cluster: g.Cluster, Asked: dash(string(g.ReplicationState)), State: dash(string(g.State)),
			DataReady: condState(string(g.DataReady)), DataProtected: condState(string(g.DataProtected)), PVCs: "-", LastSync: "-"}
		if ok, why := v.Reachability(g.Cluster); ok {
			row.Reachable = stateOf("True", levelOK)
		} else {
			row.Reachable = stateOf("False", levelCritical)
			row.Problems = append(row.Problems, why)
		}
		if g.ProtectedPVCs != nil {
			row.PVCs = fmt.Sprint(*g.ProtectedPVCs)
		}
		if g.LastGroupSyncTime != nil {
			row.LastSync = cli.Age(now.Sub(g.LastGroupSyncTime.Time)) + " ago (" + g.LastGroupSyncTime.UTC().Format(time.TimeOnly) + " UTC)"
		}
		for _, c := range g.Problems {
			row.Problems = append(row.Problems, fmt.Sprintf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
		}
		out = append(out, row)
	}
	return out
}

// pvcsOf lists the PVCs of each group as the hub summarises them, and a note for a group that
// has more PVCs than its summary lists.
func pvcsOf(v status.AppView, now time.Time) ([]pvcRow, []string) {
	var rows []pvcRow
	var notes []string
	for _, g := range v.DRPC.Status.VRGs {
		for _, p := range g.PVCs {
			rows = append(rows, pvcRowOf(g.Cluster, p, v.Interval, now))
		}
		if total := g.ProtectedPVCs; total != nil && len(g.PVCs) >= v1alpha1.MaxPVCSummaries && int(*total) > len(g.PVCs) {
			notes = append(notes, fmt.Sprintf("%s: %d of its %d PVCs are shown, those not protected first, then the least recently synced; "+
				"the status.protectedPVCs of its VolumeReplicationGroup %s/%s on %s lists them all.",
				g.Cluster, len(g.PVCs), *total, v.DRPC.Namespace, v.DRPC.Name, g.Cluster))
		}
	}
	return rows, notes
}

// pvcRowOf shows a PVC's last sync as "age/interval level", the words and thresholds of the
// application's RPO lag, with the time it started and how long it took.
func pvcRowOf(cluster string, p v1alpha1.PVCSyncSummary, interval time.Duration, now time.Time) pvcRow {
	row := pvcRow{Cluster: cluster, PVC: p.Namespace + "/" + p.Name, At: "-", Took: "-", Reason: dash(p.Reason),
		LastSync: stateOf("not synced yet", levelNone), DataProtected: condState(string(p.DataProtected))}
	if t := p.LastSyncTime; t != nil {
		lag := now.Sub(t.Time)
		word := cli.Age(lag) + " ago (interval unknown)"
		level := lagLevel(lag, interval)
		if level != levelNone {
			word = cli.Age(lag) + "/" + cli.Age(interval) + " " + level
		}
		row.LastSync = stateOf(word, level)
		row.At = t.UTC().Format(time.DateTime) + " UTC"
	}
	if d := p.LastSyncDuration; d != nil {
		row.Took = d.Round(100 * time.Microsecond).String()
	}
	return row
}

// timeline is the application's story, newest first: the hub's Events about its
// DRPlacementControl, its action's start and end, and its conditions' transitions.
func (s *Server) timeline(ctx context.Context, d *v1alpha1.DRPlacementControl) []timelineRow {
	var out []timelineRow
	add := func(t time.Time, what, detail string) {
		if !t.IsZero() {
			out = append(out, timelineRow{at: t, At: t.UTC().Format(time.DateTime) + " UTC", What: what, Detail: detail})
		}
	}
	events := &corev1.EventList{}
	if err := s.c.List(ctx, events, client.InNamespace(d.Namespace),
		client.MatchingFields{"involvedObject.kind": "DRPlacementControl", "involvedObject.name": d.Name}); err != nil {
		add(s.now(), "Events not read", readProblem("the Events of the DRPlacementControl", err))
	}
	for _, e := range events.Items {
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		add(t, "Event "+e.Reason, e.Message)
	}
	st := d.Status
	if st.ActionStartTime != nil && st.Phase != v1alpha1.PhaseDeployed && st.Phase != v1alpha1.PhaseDeploying {
		verb := cli.ActionOf(st.Phase)
		add(st.ActionStartTime.Time, verb+" started", "to "+st.ActionTarget)
		if st.ActionDuration != nil && !cli.InAction(st.Phase) {
			add(st.ActionStartTime.Add(st.ActionDuration.Duration), verb+" done", fmt.Sprintf("phase %s on %s, took %s", st.Phase, st.CurrentPrimary, st.ActionDuration.Duration))
		}
	}
	for _, c := range st.Conditions {
		add(c.LastTransitionTime.Time, c.Type+" "+string(c.Status), c.Reason+": "+c.Message)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
	return out
}

// actionsOf are the failover and relocation the application can be asked for: to each other
// cluster of its policy.
func actionsOf(v status.AppView) []actionLink {
	var out []actionLink
	base := "/apps/" + v.DRPC.Namespace + "/" + v.DRPC.Name + "/plan"
	for name := range v.Clusters {
		if name == v.DRPC.Status.CurrentPrimary {
			continue
		}
		out = append(out, actionLink{Label: "Fail over to " + name, Href: base + "?action=Failover&to=" + name},
			actionLink{Label: "Relocate to " + name, Href: base + "?action=Relocate&to=" + name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
