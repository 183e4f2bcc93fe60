package soak

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/story"
)

func TestTheSummaryAddsUpEveryCycle(t *testing.T) {
	rep := &Report{Cycles: 3, KillEvery: time.Minute, Seed: 9, Kills: map[string]int{"hub": 2, "agent/east": 0, "agent/west": 1},
		Ran: []Cycle{
			{N: 1, Steps: []story.Step{
				{Action: "failover", From: "east", To: "west", Duration: 3 * time.Second, Kept: 90, Lost: 12, LossBound: 4 * time.Second},
				{Action: "recover", From: "east", To: "east", Duration: 30 * time.Second},
				{Action: "relocate", From: "west", To: "east", Duration: 5 * time.Second, Kept: 300},
			}},
			{N: 2, Steps: []story.Step{
				{Action: "relocate", From: "east", To: "west", Duration: 6 * time.Second, Kept: 500},
				{Action: "failover", From: "west", To: "east", Duration: 41 * time.Second, Kept: 700, Lost: 30, LossBound: 9 * time.Second},
				{Action: "recover", From: "west", To: "west", Duration: 20 * time.Second},
			}},
			{N: 3, Duration: 31 * time.Second, Err: errors.New("relocate west→east: lost 2"), Steps: []story.Step{
				{Action: "failover", From: "east", To: "west", Duration: 2 * time.Second, Kept: 900, Lost: 3, LossBound: 2 * time.Second},
				{Action: "recover", From: "east", To: "east", Duration: 25 * time.Second},
				{Action: "relocate", From: "west", To: "east", Duration: 4 * time.Second, Kept: 1000, Lost: 2, Err: errors.New("lost 2")},
			}},
		}}
	s := rep.Summary()
	if s.Passed != 2 || s.Failed != 1 {
		t.Errorf("passed %d, failed %d; want 2 and 1", s.Passed, s.Failed)
	}
	if s.RelocateKept != 1800 || s.RelocateLost != 2 {
		t.Errorf("relocations kept %d and lost %d; want 1800 and 2", s.RelocateKept, s.RelocateLost)
	}
	if s.WorstCycle != 2 || s.WorstFailover.Lost != 30 || s.WorstFailover.LossBound != 9*time.Second {
		t.Errorf("the worst failover is cycle %d's %+v; want cycle 2's, 30 lost", s.WorstCycle, s.WorstFailover)
	}
	if s.SlowestCycle != 2 || s.Slowest.Action != "failover" || s.Slowest.Duration != 41*time.Second {
		t.Errorf("the slowest is cycle %d's %+v; want cycle 2's failover, 41s", s.SlowestCycle, s.Slowest)
	}
	var b bytes.Buffer
	rep.PrintSummary(&b)
	for _, want := range []string{
		"cycles: 2 passed, 1 failed, of 3 asked",
		"records lost on relocation: 2 of 1802 (must be 0)",
		"worst failover loss: 30 records (cycle 2, west→east), bound: the writes of the last 9.0s",
		"slowest step: failover west→east in cycle 2, 41.0s",
		"kills: 3 (agent/east 0, agent/west 1, hub 2), one every 1m0s on average, seed 9",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
	if line := rep.cycleLine(rep.Ran[2]); !strings.HasPrefix(line, "cycle 3/3 FAILED: relocate west→east: lost 2 in 31.0s") {
		t.Errorf("the failed cycle's line is %q", line)
	}
}

// A soak of PostgreSQL counts pgbench's transactions, not records: its summary and table say so.
func TestASoakOfPostgreSQLCountsTransactions(t *testing.T) {
	rep := &Report{Cycles: 1, Case: story.Case{Workload: story.Postgres}, Ran: []Cycle{{N: 1, Steps: []story.Step{
		{Action: "relocate", From: "east", To: "west", Duration: 5 * time.Second, Kept: 4739},
		{Action: "failover", From: "west", To: "east", Duration: 7 * time.Second, Kept: 2264, Lost: 1140, LossBound: 6 * time.Second},
	}}}}
	var b bytes.Buffer
	rep.PrintSummary(&b)
	rep.WriteMarkdown(&b)
	for _, want := range []string{
		"transactions lost on relocation: 0 of 4739 (must be 0)",
		"worst failover loss: 1140 transactions (cycle 1, west→east)",
		"| TRANSACTIONS KEPT | TRANSACTIONS LOST |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(strings.ToLower(b.String()), "records") {
		t.Errorf("a PostgreSQL soak's report speaks of records:\n%s", b.String())
	}
}
