package drcluster

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Metrics are the DRClusters' metrics (docs/metrics.md), computed at each scrape from their
// status in the manager's cache.
type Metrics struct {
	reader    client.Reader
	reachable *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the metrics of the DRClusters that reader (the manager's cached client)
// holds.
func NewMetrics(reader client.Reader) *Metrics {
	return &Metrics{reader: reader, reachable: prometheus.NewDesc("drover_drcluster_reachable",
		"1 while the DRCluster's Reachable condition is True (the hub's probe succeeds, or fails for less than the grace period); 0 once it is unreachable.",
		[]string{"cluster"}, nil)}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.reachable }

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.DRClusterList{}
	if err := m.reader.List(ctx, list); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Failed to list DRClusters for the metrics")
		return
	}
	for _, drc := range list.Items {
		v := 0.0
		if apimeta.IsStatusConditionTrue(drc.Status.Conditions, v1alpha1.ConditionReachable) {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.reachable, prometheus.GaugeValue, v, drc.Name)
	}
}
