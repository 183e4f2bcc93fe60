package dashboard

import (
	"strings"
	"testing"
	"time"
)

func TestTheLagChartScalesTheSamplesAndMarksTheAlertThresholds(t *testing.T) {
	end := time.Unix(1_800_000_000, 0)
	start := float64(end.Add(-chartSpan).Unix())
	values := [][2]any{{start, "0.5"}, {start + chartSpan.Seconds()/2, "2.5"}, {float64(end.Unix()), "8"}, {start + 60, "not a number"}}
	c := drawChart(values, end)
	if c.Samples != 3 {
		t.Errorf("the chart has %d samples, want 3 (the unparsable one left out)", c.Samples)
	}
	// The top is 10% above the largest sample, 8.8 intervals: the warning line (2) sits lower
	// on the chart than the critical one (3), and both inside it.
	if !(c.Warn > c.Crit && c.Crit > 0 && c.Warn < float64(c.Height)) {
		t.Errorf("the thresholds are drawn at y=%.1f (2 intervals) and y=%.1f (3), want 0 < crit < warn < %d", c.Warn, c.Crit, c.Height)
	}
	pts := strings.Fields(c.Points)
	if len(pts) != 3 || !strings.HasPrefix(pts[0], "0.0,") || !strings.HasPrefix(pts[2], "600.0,") {
		t.Errorf("the polyline spans %q, want 3 points from x=0 to x=600", c.Points)
	}
	if c.Latest != "8.00" || c.Max != "8.8" {
		t.Errorf("latest %s and top %s, want 8.00 and 8.8", c.Latest, c.Max)
	}
}
