package soak

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/story"
)

// Report is a whole soak.
type Report struct {
	Case story.Case
	// Seed and KillEvery replay the kills' schedule; Cycles is how many were asked for.
	Seed      uint64
	KillEvery time.Duration
	Cycles    int
	Protect   story.Step
	// Ran are the cycles that ran, in order.
	Ran []Cycle
	// Kills counts the kills per component (Component), every target listed.
	Kills map[string]int
	// Overlap is the longest time both clusters ran the application's writers after a lost
	// cluster returned (the story's watcher).
	Overlap  time.Duration
	Duration time.Duration
	// LogsDir is the lab's directory, where every process's log is.
	LogsDir string
}

// Summary is what the report's figures add up to.
type Summary struct {
	Passed, Failed int
	// RelocateKept and RelocateLost sum the records over every relocation; Lost must be 0.
	RelocateKept, RelocateLost uint64
	// WorstFailover is the failover that lost the most records (its LossBound the writes it
	// could lose), Slowest the longest failover, relocation or recovery; WorstCycle and
	// SlowestCycle are their cycles, 0 when none ran.
	WorstFailover, Slowest   story.Step
	WorstCycle, SlowestCycle int
}

// Summary adds the cycles up.
func (r *Report) Summary() Summary {
	var s Summary
	for _, c := range r.Ran {
		if c.Err != nil {
			s.Failed++
		} else {
			s.Passed++
		}
		for _, st := range c.Steps {
			switch st.Action {
			case "relocate":
				s.RelocateKept += st.Kept
				s.RelocateLost += st.Lost
			case "failover":
				if s.WorstCycle == 0 || st.Lost > s.WorstFailover.Lost {
					s.WorstFailover, s.WorstCycle = st, c.N
				}
			}
			if st.Duration > s.Slowest.Duration {
				s.Slowest, s.SlowestCycle = st, c.N
			}
		}
	}
	return s
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// cycleLine is the one-line summary of a cycle.
func (r *Report) cycleLine(c Cycle) string {
	verdict := "ok"
	if c.Err != nil {
		verdict = "FAILED: " + c.Err.Error()
	}
	var steps []string
	for _, st := range c.Steps {
		steps = append(steps, fmt.Sprintf("%s %s→%s %s", st.Action, st.From, st.To, secs(st.Duration)))
	}
	return fmt.Sprintf("cycle %d/%d %s in %s: %s; kills: %s", c.N, r.Cycles, verdict, secs(c.Duration),
		strings.Join(steps, ", "), killsOf(c))
}

// killsOf lists a cycle's kills per component, in the order of their first kill: "hub ×2,
// agent/east ×1", or "none".
func killsOf(c Cycle) string {
	var order []string
	n := map[string]int{}
	for _, k := range c.Kills {
		if n[k.Component] == 0 {
			order = append(order, k.Component)
		}
		n[k.Component]++
	}
	if len(order) == 0 {
		return "none"
	}
	out := make([]string, len(order))
	for i, name := range order {
		out[i] = fmt.Sprintf("%s ×%d", name, n[name])
	}
	return strings.Join(out, ", ")
}

// killLine lists the kills per component in a stable order.
func (r *Report) killLine() string {
	names := make([]string, 0, len(r.Kills))
	total := 0
	for name, n := range r.Kills {
		names = append(names, fmt.Sprintf("%s %d", name, n))
		total += n
	}
	slices.Sort(names)
	if r.KillEvery <= 0 {
		return "none (restarts off)"
	}
	return fmt.Sprintf("%d (%s), one every %s on average, seed %d", total, strings.Join(names, ", "), r.KillEvery, r.Seed)
}

// lines are the summary's lines, for the text and the markdown.
func (r *Report) lines() []string {
	s := r.Summary()
	unit := strings.ToLower(r.Case.Unit()) // records of the lab's writer, transactions of pgbench
	out := []string{
		fmt.Sprintf("application: %s, protected in %s", r.Case.Name(), secs(r.Protect.Duration)),
		fmt.Sprintf("cycles: %d passed, %d failed, of %d asked", s.Passed, s.Failed, r.Cycles),
		fmt.Sprintf("%s lost on relocation: %d of %d (must be 0)", unit, s.RelocateLost, s.RelocateLost+s.RelocateKept),
	}
	if s.WorstCycle > 0 {
		w := s.WorstFailover
		out = append(out, fmt.Sprintf("worst failover loss: %d %s (cycle %d, %s→%s), bound: the writes of the last %s",
			w.Lost, unit, s.WorstCycle, w.From, w.To, secs(w.LossBound)))
	}
	out = append(out, fmt.Sprintf("longest two-primaries overlap: %s (writers on both clusters after a return)", secs(r.Overlap)))
	if s.SlowestCycle > 0 {
		out = append(out, fmt.Sprintf("slowest step: %s %s→%s in cycle %d, %s", s.Slowest.Action, s.Slowest.From, s.Slowest.To,
			s.SlowestCycle, secs(s.Slowest.Duration)))
	}
	return append(out, "kills: "+r.killLine(), "total time: "+r.Duration.Round(time.Second).String(), "lab logs: "+r.LogsDir)
}

// PrintSummary writes the summary as text.
func (r *Report) PrintSummary(w io.Writer) {
	fmt.Fprintln(w, "\n== soak summary")
	for _, l := range r.lines() {
		fmt.Fprintln(w, l)
	}
}

// WriteMarkdown writes the summary and every cycle's steps as markdown.
func (r *Report) WriteMarkdown(w io.Writer) {
	for _, l := range r.lines() {
		fmt.Fprintf(w, "- %s\n", l)
	}
	unit := r.Case.Unit()
	fmt.Fprintf(w, "\n| CYCLE | ACTION | FROM → TO | DURATION | %s KEPT | %s LOST | LOSS BOUND | KILLS IN THE CYCLE | CHECK |\n", unit, unit)
	fmt.Fprint(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Ran {
		for i, st := range c.Steps {
			bound, check, k := "-", "ok", ""
			switch st.Action {
			case "failover":
				bound = secs(st.LossBound)
			case "relocate":
				bound = "0"
			}
			if st.Err != nil {
				check = "FAILED: " + strings.ReplaceAll(st.Err.Error(), "|", `\|`)
			}
			if i == 0 {
				k = killsOf(c)
			}
			fmt.Fprintf(w, "| %d | %s | %s → %s | %s | %d | %d | %s | %s | %s |\n", c.N, st.Action, st.From, st.To,
				secs(st.Duration), st.Kept, st.Lost, bound, k, check)
		}
	}
}
