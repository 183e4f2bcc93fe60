package soak

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

// hubRestarts is the lab kubelet's restart count of the hub's container.
func hubRestarts(t *testing.T) int32 {
	t.Helper()
	st, err := testLab.DroverStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Cluster == lab.Hub {
			return p.Restarts
		}
	}
	t.Fatal("the lab reports no hub process")
	return 0
}

// A one-cycle soak with one hub kill runs in make test so the soak cannot rot: the cycle must
// pass, and every figure of the summary must come from the run: the kill from the lab
// kubelet's restart count, the records and the slowest step from the cycle's own steps.
func TestAOneCycleSoakWithAHubKillReportsWhatRan(t *testing.T) {
	out := labtest.LogWriter(t)
	env, err := story.LabEnv(testLab.Lab, out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := story.LabCase(string(story.StatefulSetKeepsPVCs), lab.PolicyVolRep, string(story.SelfContained))
	if err != nil {
		t.Fatal(err)
	}
	c.Namespace, c.Replicas = "soak-test", 1
	before := hubRestarts(t)
	rep, err := Run(t.Context(), Options{Lab: testLab.Lab, Env: env, Case: c, Home: lab.East, Cycles: 1,
		KillEvery: 5 * time.Second, Seed: 1, Targets: []string{lab.Hub}, MaxKills: 1, Out: out})
	if rep == nil {
		t.Fatalf("no report: %v", err)
	}
	var summary, md bytes.Buffer
	rep.PrintSummary(&summary)
	rep.WriteMarkdown(&md)
	t.Logf("the summary:\n%s", summary.String())
	if err != nil {
		t.Fatalf("the soak failed: %v", err)
	}
	if len(rep.Ran) != 1 || len(rep.Ran[0].Steps) != 3 {
		t.Fatalf("want 1 cycle of 3 steps, got %+v", rep.Ran)
	}
	if got := hubRestarts(t) - before; rep.Kills["hub"] != 1 || got != 1 {
		t.Errorf("the soak counts %d hub kills, the lab kubelet restarted the hub %d times; want 1 and 1", rep.Kills["hub"], got)
	}
	if k := rep.Ran[0].Kills; len(k) != 1 || k[0].Restarted <= 0 {
		t.Errorf("the cycle's kill was not seen restarted: %+v", k)
	}
	s := rep.Summary()
	steps := rep.Ran[0].Steps
	failover, relocate := steps[0], steps[2]
	if failover.Action != "failover" || relocate.Action != "relocate" || steps[1].Action != "recover" {
		t.Fatalf("the first cycle is failover, recover, relocate; got %+v", steps)
	}
	if s.Passed != 1 || s.Failed != 0 || s.RelocateLost != 0 || s.RelocateKept != relocate.Kept || relocate.Kept == 0 {
		t.Errorf("the summary does not add up the cycle: %+v, relocation %+v", s, relocate)
	}
	if s.WorstFailover.Lost != failover.Lost || s.WorstFailover.LossBound != failover.LossBound || failover.LossBound <= 0 {
		t.Errorf("the worst failover is not the cycle's failover: %+v vs %+v", s.WorstFailover, failover)
	}
	slowest := steps[0]
	for _, st := range steps {
		if st.Duration > slowest.Duration {
			slowest = st
		}
	}
	if s.Slowest.Action != slowest.Action || s.Slowest.Duration != slowest.Duration || s.SlowestCycle != 1 {
		t.Errorf("the slowest step is %s in %s, the summary says %s in %s", slowest.Action, slowest.Duration, s.Slowest.Action, s.Slowest.Duration)
	}
	for _, want := range []string{
		"cycles: 1 passed, 0 failed, of 1 asked",
		fmt.Sprintf("records lost on relocation: 0 of %d", relocate.Kept),
		fmt.Sprintf("worst failover loss: %d records (cycle 1, east→west)", failover.Lost),
		"kills: 1 (hub 1)",
	} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	if !strings.Contains(md.String(), "| 1 | relocate | west → east |") {
		t.Errorf("the markdown lacks the cycle's relocation:\n%s", md.String())
	}
}
