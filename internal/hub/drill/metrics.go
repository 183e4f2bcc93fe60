package drill

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Metrics are the drills' gauges (docs/metrics.md), computed at each scrape from the DRDrills
// in the manager's cache: they hold across a restarted hub and need no clean-up. Labels: the
// application's namespace and DRPlacementControl (drpc). An application appears once one of
// its drills has finished; its last-success timestamp is 0 until a drill passes, so "no
// successful drill for 30 days" also fires for one whose drills all failed.
type Metrics struct {
	reader client.Reader

	lastSuccess, rto, rpo *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the metrics of the drills that reader (the manager's cached client) holds.
func NewMetrics(reader client.Reader) *Metrics {
	labels := []string{"namespace", "drpc"}
	return &Metrics{
		reader: reader,
		lastSuccess: prometheus.NewDesc("drover_drill_last_success_timestamp_seconds",
			"End time of the application's newest drill that passed; 0 when none of its drills kept as history passed.", labels, nil),
		rto: prometheus.NewDesc("drover_drill_rto_seconds",
			"RTO measured by the application's newest drill that passed: from its start to the sandbox Ready and checked.", labels, nil),
		rpo: prometheus.NewDesc("drover_drill_rpo_seconds",
			"RPO measured by the application's newest drill that passed: the worst age of the replicated points it started from.", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.lastSuccess
	ch <- m.rto
	ch <- m.rpo
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.DRDrillList{}
	if err := m.reader.List(ctx, list); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Failed to list DRDrills for the metrics")
		return
	}
	type app struct{ namespace, drpc string }
	passed := map[app]*v1alpha1.DRDrill{}
	for i := range list.Items {
		d := &list.Items[i]
		if !final(d.Status.Phase) || d.Status.Phase == v1alpha1.DrillRefused {
			continue
		}
		key := app{d.Namespace, d.Spec.DRPCName}
		best, seen := passed[key]
		if !seen {
			passed[key] = nil
		}
		if d.Status.Phase == v1alpha1.DrillPassed && d.Status.EndTime != nil && (best == nil || best.Status.EndTime.Before(d.Status.EndTime)) {
			passed[key] = d
		}
	}
	for key, d := range passed {
		gauge := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, key.namespace, key.drpc)
		}
		if d == nil {
			gauge(m.lastSuccess, 0)
			continue
		}
		gauge(m.lastSuccess, float64(d.Status.EndTime.Unix()))
		if d.Status.RTOSeconds != nil {
			gauge(m.rto, float64(*d.Status.RTOSeconds))
		}
		if d.Status.RPOSeconds != nil {
			gauge(m.rpo, float64(*d.Status.RPOSeconds))
		}
	}
}
