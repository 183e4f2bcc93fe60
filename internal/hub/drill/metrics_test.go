package drill

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The gauges follow the newest drill that passed; an application whose drills all failed
// reports 0 as its last success, and one never drilled reports nothing.
func TestMetricsReportTheNewestDrillThatPassed(t *testing.T) {
	w := newWorld(t)
	m := NewMetrics(w.hub)
	w.g.Expect(collect(w.g, m)).NotTo(ContainSubstring("drover_drill_"), "never drilled")

	failing := w.create("failing", func(d *v1alpha1.DRDrill) { d.Spec.Timeout = nil })
	w.reconcile(failing)
	w.reconcile(failing)
	w.agentReports(failing, v1alpha1.DrillSandboxStatus{Result: v1alpha1.DrillResultFailed, Message: "a PVC did not bind"})
	w.reconcile(failing)
	w.agentRemoves(failing)
	w.reconcile(failing)
	w.g.Expect(w.drill(failing).Status.Phase).To(Equal(v1alpha1.DrillFailed))
	expectMetrics(w.g, m, `drover_drill_last_success_timestamp_seconds{drpc="db",namespace="app"} 0`)

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
	expectMetrics(w.g, m, `
drover_drill_last_success_timestamp_seconds{drpc="db",namespace="app"} `+strings.TrimSpace(formatFloat(d.Status.EndTime.Unix()))+`
drover_drill_rto_seconds{drpc="db",namespace="app"} 12
drover_drill_rpo_seconds{drpc="db",namespace="app"} 9
`)
}

func formatFloat(v int64) string {
	var b bytes.Buffer
	reg := prometheus.NewPedanticRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	g.Set(float64(v))
	reg.MustRegister(g)
	families, _ := reg.Gather()
	_ = expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain)).Encode(families[0])
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "x ")
}

// expectMetrics checks that each line of want is a sample the metrics collect now.
func expectMetrics(g Gomega, m *Metrics, want string) {
	got := collect(g, m)
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		g.Expect(got).To(ContainSubstring("\n"+line+"\n"), "metrics:\n%s", got)
	}
}

// collect returns the metrics in the text format, with a newline first, through a pedantic
// registry.
func collect(g Gomega, m *Metrics) string {
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(m)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		g.Expect(enc.Encode(f)).To(Succeed())
	}
	return "\n" + out.String()
}
