package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

// A tiny benchmark (two applications of one PVC, two drilled at once, a hub fill of five) runs
// in make test so the
// benchmark cannot rot: every action must succeed and every figure of the table be measured.
// It asserts no timing: those are the benchmark's output, not a test's verdict.
func TestATinyBenchmarkMeasuresEveryFigure(t *testing.T) {
	out := labtest.LogWriter(t)
	env, err := story.LabEnv(testLab.Lab, out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), Options{Lab: testLab.Lab, Env: env, Sizes: []int{2}, PVCs: []int{1},
		SettleWindow: 10 * time.Second, Drills: 2, HubDRPCs: 5, Out: out})
	var table, md bytes.Buffer
	if rep != nil {
		rep.PrintTable(&table)
		rep.WriteMarkdown(&md)
	}
	t.Logf("the benchmark's table:\n%s", table.String())
	if err != nil {
		t.Fatalf("the benchmark failed: %v", err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1 (2 applications × 1 PVC)", len(rep.Results))
	}
	r := rep.Results[0]
	if !r.Complete() {
		t.Errorf("the result is incomplete: %+v", r)
	}
	if r.RecordsLost != 0 {
		t.Errorf("the relocation lost %d records", r.RecordsLost)
	}
	if r.VRGWritesPerMin <= 0 || r.AllWritesPerMin <= 0 || r.HubP99 <= 0 || r.AgentP99 <= 0 {
		t.Errorf("settled writes or reconcile latencies not measured: %+v", r)
	}
	if r.FailoverP50 <= 0 || r.FailoverP50 > r.Failover || r.RelocateP50 <= 0 || r.RelocateP50 > r.Relocate {
		t.Errorf("the applications' median failover %s (all: %s) and relocation %s (all: %s) are not measured or exceed the whole step",
			r.FailoverP50, r.Failover, r.RelocateP50, r.Relocate)
	}
	if r.FloorBusy <= 0 || r.SettledBusy <= 0 {
		t.Errorf("the cores busy during the floor (%.2f) and while settled (%.2f) are not measured", r.FloorBusy, r.SettledBusy)
	}
	if s := r.Sealing; s.Seal <= 0 || s.Open <= 0 || s.SealedBytes <= 0 || s.OpenedBytes <= 0 || r.AgentCPU <= 0 {
		t.Errorf("the agents' sealing (%+v) or their CPU (%s) is not measured", s, r.AgentCPU)
	}
	if r.SyncLags == 0 {
		t.Errorf("no storage sync was seen while settled, so no DRPC's lag was measured: %+v", r)
	}
	row := strings.Split(strings.TrimSpace(strings.Split(table.String(), "\n")[2]), "  ")
	for _, cell := range row {
		if strings.TrimSpace(cell) == "-" {
			t.Errorf("the table has an empty cell in its row:\n%s", table.String())
			break
		}
	}
	if d := rep.Drills; d == nil || d.Modes[v1alpha1.DrillModeFull] != 2 || d.RTOs != 2 || d.ToResults <= 0 || d.ToTornDown <= 0 {
		t.Errorf("the drill mode is incomplete (two Full drills with an RTO each, the times to their results and to their teardown): %+v", d)
	}
	h := rep.Hub
	if h == nil || h.Deployed != 5 || h.Window <= 0 || h.HubRSS <= 0 {
		t.Fatalf("the hub fill is incomplete: %+v", h)
	}
	for _, c := range []string{"east", "west"} {
		if _, ok := h.RequestsPerSecond[c]; !ok {
			t.Errorf("no request rate to %s: %+v", c, h.RequestsPerSecond)
		}
	}
	for _, want := range []string{"| PVCS/APP | APPS | FLOOR |", "| AGENT CPU | SEAL/OPEN TIME (OF AGENT CPU) |", "| 1 | 2 | ", "| 2 | 1 | Full 2 | ", "- Hub fill: 5 DRPlacementControls"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md.String())
		}
	}
}
