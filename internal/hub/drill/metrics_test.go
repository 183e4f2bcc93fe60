package drill

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/metrics/metricstest"
)

// The gauges follow the newest drill that passed; an application whose drills all failed
// reports 0 as its last success, and one never drilled reports nothing.
func TestMetricsReportTheNewestDrillThatPassed(t *testing.T) {
	w := newWorld(t)
	m := NewMetrics(w.hub)
	w.g.Expect(metricstest.Text(w.g, m)).NotTo(ContainSubstring("drover_drill_"), "never drilled")

	failing := w.create("failing", func(d *v1alpha1.DRDrill) { d.Spec.Timeout = nil })
	w.reconcile(failing)
	w.reconcile(failing)
	w.agentReports(failing, v1alpha1.DrillSandboxStatus{Result: v1alpha1.DrillResultFailed, Message: "a PVC did not bind"})
	w.reconcile(failing)
	w.agentRemoves(failing)
	w.reconcile(failing)
	w.g.Expect(w.drill(failing).Status.Phase).To(Equal(v1alpha1.DrillFailed))
	metricstest.ExpectSamples(w.g, m, `drover_drill_last_success_timestamp_seconds{drpc="db",namespace="app"} 0`)

	w.tick(time.Minute)
	passing := w.create("passing", nil)
	w.reconcile(passing)
	start := w.drill(passing).Status.StartTime.Time
	w.reconcile(passing)
	w.tick(20 * time.Second)
	w.agentReports(passing, w.passedStatus(start, 12*time.Second))
	w.reconcile(passing)
	w.agentRemoves(passing)
	w.reconcile(passing)
	d := w.drill(passing)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillPassed))
	metricstest.ExpectSamples(w.g, m, `
drover_drill_last_success_timestamp_seconds{drpc="db",namespace="app"} `+formatFloat(w.g, d.Status.EndTime.Unix())+`
drover_drill_rto_seconds{drpc="db",namespace="app"} 12
drover_drill_rpo_seconds{drpc="db",namespace="app"} 9
`)
}

// formatFloat is v as the text format writes a sample's value.
func formatFloat(g Gomega, v int64) string {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	gauge.Set(float64(v))
	text := strings.TrimSpace(metricstest.Text(g, gauge))
	return text[strings.LastIndex(text, " ")+1:]
}
