package drpc

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/metrics/metricstest"
)

// The DRPlacementControl's gauges follow its status through a failover with the primary lost:
// the RPO lag keeps growing from the last sync seen on the lost primary, the action's running
// time shows while it runs, and its duration and result once it completes.
func TestMetricsFollowAFailoverWithThePrimaryLost(t *testing.T) {
	w := newWorld(t, appDRPC())
	m := NewMetrics(w.hub)
	m.now = func() time.Time { return w.now }
	w.r.Metrics = m
	w.deployed()
	metricstest.ExpectSamples(w.g, m, `
drover_drpc_rpo_lag_seconds{name="app",namespace="app"} 1
drover_drpc_rpo_lag_intervals{name="app",namespace="app"} 0.1
drover_drpc_schedule_interval_seconds{name="app",namespace="app"} 10
drover_drpc_protected{name="app",namespace="app"} 1
drover_drpc_peer_ready{name="app",namespace="app"} 1
drover_drpc_validated{name="app",namespace="app"} 1
drover_drpc_phase{name="app",namespace="app",phase="Deployed"} 1
drover_drpc_progression{name="app",namespace="app",progression="Completed"} 1
`)

	w.gw.SetDown("east", true)
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.now = w.now.Add(3 * time.Second)
	metricstest.ExpectSamples(w.g, m, `
drover_drpc_rpo_lag_seconds{name="app",namespace="app"} 64
drover_drpc_rpo_lag_intervals{name="app",namespace="app"} 6.4
drover_drpc_action_running_seconds{action="Failover",name="app",namespace="app"} 3
drover_drpc_last_action_result{action="Failover",name="app",namespace="app",result="Running"} 1
drover_drpc_protected{name="app",namespace="app"} 0
drover_drpc_phase{name="app",namespace="app",phase="FailingOver"} 1
`)

	w.now = w.now.Add(2 * time.Second)
	w.agent("west", false)
	w.reconcile()
	metricstest.ExpectSamples(w.g, m, `
drover_drpc_rpo_lag_seconds{name="app",namespace="app"} 1
drover_drpc_last_action_duration_seconds{action="Failover",name="app",namespace="app"} 5
drover_drpc_last_action_result{action="Failover",name="app",namespace="app",result="Succeeded"} 1
drover_drpc_phase{name="app",namespace="app",phase="FailedOver"} 1
drover_actions_total{action="Failover",result="Succeeded"} 1
drover_action_duration_seconds_count{action="Failover",result="Succeeded"} 1
drover_action_duration_seconds_sum{action="Failover",result="Succeeded"} 5
`)
	w.g.Expect(metricstest.Text(w.g, m)).NotTo(ContainSubstring("drover_drpc_action_running_seconds"), "no action runs")
}

// A refused relocation is the last action's result and counts once.
func TestMetricsReportARefusedRelocation(t *testing.T) {
	w := newWorld(t, appDRPC())
	m := NewMetrics(w.hub)
	m.now = func() time.Time { return w.now }
	w.r.Metrics = m
	w.deployed()
	w.gw.SetDown("west", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	w.reconcile()
	metricstest.ExpectSamples(w.g, m, `
drover_drpc_last_action_result{action="Relocate",name="app",namespace="app",result="Refused"} 1
drover_actions_total{action="Relocate",result="Refused"} 1
`)
}

// Before any action ended, every action's counter and duration histogram is there at 0, so that
// rate() and increase() (the dashboard's, an alert's) see the first failover: a series born at 1
// shows no increase.
func TestTheActionsSeriesStartAtZero(t *testing.T) {
	w := newWorld(t, appDRPC())
	m := NewMetrics(w.hub)
	metricstest.ExpectSamples(w.g, m, `
drover_actions_total{action="Failover",result="Succeeded"} 0
drover_actions_total{action="Failover",result="Refused"} 0
drover_actions_total{action="Relocate",result="Succeeded"} 0
drover_actions_total{action="Relocate",result="Refused"} 0
drover_actions_total{action="Relocate",result="Overtaken"} 0
drover_action_duration_seconds_count{action="Failover",result="Succeeded"} 0
drover_action_duration_seconds_count{action="Relocate",result="Succeeded"} 0
drover_action_duration_seconds_count{action="Relocate",result="Overtaken"} 0
`)
}
