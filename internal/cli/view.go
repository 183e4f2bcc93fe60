package cli

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// StatusRow is one line of `drover status`, for front ends other than the terminal (the
// dashboard): the same cells, computed by the same code.
type StatusRow = statusRow

// AppView is one application as `drover status` judges it: its line, its DRPlacementControl,
// its policy's interval and the age of its recovery point.
type AppView struct {
	Row  StatusRow
	DRPC *v1alpha1.DRPlacementControl
	// Interval is the policy's schedulingInterval; 0 when the policy is unknown.
	Interval time.Duration
	// Lag is the time since the last sync; negative when no sync is recorded.
	Lag time.Duration
	// Clusters are the DRClusters of its policy, as the hub reports them; set by LoadAppView.
	Clusters map[string]*v1alpha1.DRCluster
}

// LoadAppViews reads the applications that o selects (as Status does) and judges each at now.
func LoadAppViews(ctx context.Context, c client.Reader, o StatusOptions) ([]AppView, error) {
	apps, _, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return nil, err
	}
	t := now(o.Now)
	out := make([]AppView, 0, len(apps))
	for _, a := range apps {
		out = append(out, viewOf(a, t))
	}
	return out, nil
}

// LoadAppView reads one application with its policy and clusters, judged at t.
func LoadAppView(ctx context.Context, c client.Reader, namespace, name string, t time.Time) (AppView, error) {
	a, err := loadApp(ctx, c, namespace, name)
	if err != nil {
		return AppView{}, err
	}
	return viewOf(a, t), nil
}

func viewOf(a *app, t time.Time) AppView {
	v := AppView{Row: rowOf(a.drpc, a.interval, t), DRPC: a.drpc, Interval: a.interval, Lag: -1, Clusters: a.clusters}
	if s := lastSync(a.drpc); s != nil {
		v.Lag = t.Sub(s.Time)
	}
	return v
}

// Reachability says whether the hub reaches cluster and, when not, why, as status and plan
// judge it.
func (v AppView) Reachability(cluster string) (bool, string) {
	return (&app{drpc: v.DRPC, clusters: v.Clusters}).reachability(cluster)
}

// ActionOf names the action of a phase: Failover, Relocate or Deploy.
func ActionOf(phase v1alpha1.DRPCPhase) string { return actionOf(phase) }

// InAction says whether the phase is a failover or a relocation in progress.
func InAction(phase v1alpha1.DRPCPhase) bool { return inAction(phase) }

// Settled says whether the phase is one where the application runs on its current primary.
func Settled(phase v1alpha1.DRPCPhase) bool { return settled(phase) }

// Age is a duration as kubectl prints ages.
func Age(d time.Duration) string { return age(d) }
