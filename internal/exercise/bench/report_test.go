package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// drillOf is a finished drill of mode with an RTO and RPO in seconds (nil: not reported) and its
// primary's replication check.
func drillOf(name string, mode v1alpha1.DrillMode, rto, rpo *int64, replication v1alpha1.DrillResult) v1alpha1.DRDrill {
	d := v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-drills-n3-0", Name: name}}
	d.Status.Phase, d.Status.Result, d.Status.Mode = v1alpha1.DrillPassed, v1alpha1.DrillResultPassed, mode
	d.Status.RTOSeconds, d.Status.RPOSeconds = rto, rpo
	d.Status.PrimaryReplication = &v1alpha1.DrillCheck{Name: "PrimaryReplication", Result: replication, Message: "last sync 12s old"}
	return d
}

func ptr(v int64) *int64 { return &v }

func TestTheDrillModeTakesTheMedianAndWorstOfTheDrillsAndCountsTheirModes(t *testing.T) {
	drills := []v1alpha1.DRDrill{
		drillOf("db-a", v1alpha1.DrillModeFull, ptr(9), ptr(4), v1alpha1.DrillResultPassed),
		drillOf("db-b", v1alpha1.DrillModeFull, ptr(31), ptr(7), v1alpha1.DrillResultFailed),
		drillOf("db-c", v1alpha1.DrillModeReadiness, nil, ptr(2), v1alpha1.DrillResultPassed),
	}
	d := Drills{N: 3, PVCs: 1, Modes: map[v1alpha1.DrillMode]int{}}
	d.measure(drills)
	d.replication(drills)
	if d.RTOs != 2 || d.RTOP50 != 9*time.Second || d.RTOMax != 31*time.Second {
		t.Errorf("RTO of %d drills p50 %s, worst %s; want 2 drills, 9s, 31s (the readiness drill has none)", d.RTOs, d.RTOP50, d.RTOMax)
	}
	if d.RPOP50 != 4*time.Second || d.RPOMax != 7*time.Second {
		t.Errorf("RPO p50 %s, worst %s; want 4s, 7s", d.RPOP50, d.RPOMax)
	}
	if got, want := d.modes(), "Full 2, Readiness 1 (not all Full)"; got != want {
		t.Errorf("modes %q, want %q", got, want)
	}
	if d.ReplicationHealthy != 2 || !strings.HasPrefix(d.ReplicationNote, "db-b: Failed: ") {
		t.Errorf("replication healthy in %d (%q), want 2 and db-b's failure named", d.ReplicationHealthy, d.ReplicationNote)
	}
}

func TestTheDrillModeIsATableOfItsOwnInTheReport(t *testing.T) {
	ok := &Drills{N: 10, PVCs: 1, Modes: map[v1alpha1.DrillMode]int{v1alpha1.DrillModeFull: 10}, RTOs: 10,
		RTOP50: 21 * time.Second, RTOMax: 34 * time.Second, RPOP50: 5 * time.Second, RPOMax: 9 * time.Second,
		ToResults: 35400 * time.Millisecond, ToTornDown: 8120 * time.Millisecond, ReplicationHealthy: 10}
	failed := &Drills{N: 10, PVCs: 1, Modes: map[v1alpha1.DrillMode]int{}, ToResults: time.Second,
		Err: errors.New("drill: drill bench-drills-n10-3/db-x ended Refused: NotProtected: not | Protected")}
	cases := []struct {
		name         string
		rep          Report
		want, absent []string
	}{
		{"drills alone: no size table, every figure in the row", Report{Drills: ok},
			[]string{"| DRILLS AT ONCE | PVCS/APP | MODE | RTO P50/WORST |", "| 10 | 1 | Full 10 | 21s / 34s | 5s / 9s | 35.40s | 8.12s | 10 of 10 | ok |"},
			[]string{"| PVCS/APP | APPS |"}},
		{"after the sizes, a second table", Report{Results: []Result{{PVCs: 1, N: 1}}, Drills: ok},
			[]string{"| PVCS/APP | APPS | FLOOR |", "| DRILLS AT ONCE |"}, nil},
		{"a refused drill fails the mode with its message, escaped", Report{Drills: failed},
			[]string{"| 10 | 1 | - | - | - | 1.00s | - | - | FAILED: drill: drill bench-drills-n10-3/db-x ended Refused: NotProtected: not \\| Protected |"},
			nil},
		{"no drill mode, no drill table", Report{Results: []Result{{PVCs: 1, N: 1}}}, nil, []string{"DRILLS AT ONCE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var md, text bytes.Buffer
			c.rep.WriteMarkdown(&md)
			c.rep.PrintTable(&text)
			for _, w := range c.want {
				if !strings.Contains(md.String(), w) {
					t.Errorf("the markdown lacks %q:\n%s", w, md.String())
				}
			}
			for _, a := range c.absent {
				if strings.Contains(md.String(), a) || strings.Contains(text.String(), a) {
					t.Errorf("the report holds %q:\n%s\n%s", a, md.String(), text.String())
				}
			}
			if c.rep.Drills != nil && !strings.Contains(text.String(), "DRILLS AT ONCE") {
				t.Errorf("the text lacks the drill table:\n%s", text.String())
			}
		})
	}
}
