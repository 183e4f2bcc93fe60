package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantileInterpolatesInsideTheBucketOfTheRank(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name          string
		before, after map[float64]float64
		q, want       float64
	}{
		{"nothing observed", map[float64]float64{}, map[float64]float64{0.1: 0, inf: 0}, 0.99, 0},
		{"all in the first bucket", map[float64]float64{}, map[float64]float64{0.1: 10, 1: 10, inf: 10}, 0.5, 0.05},
		{"the rank in the second bucket", map[float64]float64{}, map[float64]float64{0.1: 50, 1: 100, inf: 100}, 0.99, 0.982},
		{"only the observations between the scrapes count", map[float64]float64{0.1: 50, 1: 50, inf: 50}, map[float64]float64{0.1: 50, 1: 150, inf: 150}, 0.5, 0.55},
		{"beyond the last bound reports that bound", map[float64]float64{}, map[float64]float64{0.1: 0, 1: 0, inf: 10}, 0.99, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := histogramQuantile(c.q, c.before, c.after); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("histogramQuantile(%v) = %v, want %v", c.q, got, c.want)
			}
		})
	}
}

func TestAGaugeIsTheSumOfTheSeriesSelectedAndACounterIsNotOne(t *testing.T) {
	s, err := parse(`# TYPE workqueue_depth gauge
workqueue_depth{controller="volumereplicationgroup",name="volumereplicationgroup"} 7
workqueue_depth{controller="drplacementcontrol",name="drplacementcontrol"} 3
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="volumereplicationgroup",name="volumereplicationgroup"} 40
`)
	if err != nil {
		t.Fatal(err)
	}
	queue := func(name string) func(map[string]string) bool {
		return func(l map[string]string) bool { return l["name"] == name }
	}
	all := func(map[string]string) bool { return true }
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"the agent's queue", s.gauge("workqueue_depth", queue("volumereplicationgroup")), 7},
		{"every queue", s.gauge("workqueue_depth", all), 10},
		{"a gauge read as a counter", s.counter("workqueue_depth", all), 0},
		{"a counter read as a gauge", s.gauge("workqueue_adds_total", all), 0},
		{"a counter", s.counter("workqueue_adds_total", all), 40},
		{"a metric the scrape lacks", s.gauge("workqueue_unfinished_work_seconds", all), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestAProfileCountsTheStepsPassesWorkAndPhasesTheLongestFirst(t *testing.T) {
	scrape := func(passes, busy, restore, status float64) snapshot {
		text := fmt.Sprintf(`# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="volumereplicationgroup",le="1"} %[1]g
controller_runtime_reconcile_time_seconds_bucket{controller="volumereplicationgroup",le="+Inf"} %[1]g
controller_runtime_reconcile_time_seconds_sum{controller="volumereplicationgroup"} %[2]g
controller_runtime_reconcile_time_seconds_count{controller="volumereplicationgroup"} %[1]g
# TYPE drover_vrg_phase_duration_seconds histogram
drover_vrg_phase_duration_seconds_bucket{phase="restorePVCs",le="+Inf"} %[1]g
drover_vrg_phase_duration_seconds_sum{phase="restorePVCs"} %[3]g
drover_vrg_phase_duration_seconds_count{phase="restorePVCs"} %[1]g
drover_vrg_phase_duration_seconds_bucket{phase="status",le="+Inf"} %[1]g
drover_vrg_phase_duration_seconds_sum{phase="status"} %[4]g
drover_vrg_phase_duration_seconds_count{phase="status"} %[1]g
`, passes, busy, restore, status)
		s, err := parse(text)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	w := profileOf("volumereplicationgroup", scrape(10, 5, 1, 2), scrape(30, 25, 4, 14))
	if w.passes != 20 || w.busy != 20*time.Second {
		t.Errorf("want 20 passes and 20s of work over the step, got %v and %s", w.passes, w.busy)
	}
	if len(w.phases) != 2 || w.phases[0].phase != "status" || w.phases[0].seconds != 12 || w.phases[1].seconds != 3 {
		t.Errorf("want status (12s) before restorePVCs (3s), got %+v", w.phases)
	}
	if got := w.String(); !strings.Contains(got, "20 passes, 20s of work") || !strings.Contains(got, "by phase: status 12s (20), restorePVCs 3s (20)") {
		t.Errorf("the line says %q", got)
	}
	// A process restarted during the step counts from its start.
	if w := profileOf("volumereplicationgroup", scrape(10, 5, 1, 2), scrape(3, 2, 1, 1)); w.passes != 3 || w.busy != 2*time.Second {
		t.Errorf("after a restart want the new process's 3 passes and 2s, got %v and %s", w.passes, w.busy)
	}
}
