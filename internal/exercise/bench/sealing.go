package bench

import (
	"fmt"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

// Every object an agent writes to a store is sealed and every object it reads opened
// (internal/objectstore, envelope.go). The run adds up, over drover's steps (protect to
// relocate), what east's and west's agents spent on it (their drover_store_* counters) and the
// CPU the agents used in all (their processes' CPU time), so a reader sees sealing's share.

// Sealing is what the agents spent sealing and opening their objects over a run.
type Sealing struct {
	// Seal and Open are the time spent in the calls (wall time inside them: an upper bound of
	// their CPU on a busy machine).
	Seal, Open time.Duration
	// Seals and Opens count the objects; SealedBytes and OpenedBytes the bytes handed to the
	// calls (bodies to seal, envelopes to open).
	Seals, Opens, SealedBytes, OpenedBytes float64
}

// The agents' sealing counters (docs/metrics.md).
const (
	sealSeconds   = "drover_store_seal_seconds_total"
	sealedBytes   = "drover_store_sealed_bytes_total"
	sealedObjects = "drover_store_sealed_objects_total"
	openSeconds   = "drover_store_open_seconds_total"
	openedBytes   = "drover_store_opened_bytes_total"
	openedObjects = "drover_store_opened_objects_total"
)

// sealingAgents are the clusters whose agents seal.
var sealingAgents = []string{lab.East, lab.West}

// sealingOf is what an agent spent sealing between two scrapes. A counter lower at the end
// than at the start belongs to an agent that restarted in between (east's, with its cluster):
// it counts from its start. A scrape missing at the start counts as zeros; one missing at the
// end (an agent stopped) counts nothing.
func sealingOf(before, after snapshot) Sealing {
	if after == nil {
		return Sealing{}
	}
	delta := func(name string) float64 {
		all := func(map[string]string) bool { return true }
		a, b := after.counter(name, all), before.counter(name, all)
		if a < b {
			return a
		}
		return a - b
	}
	return Sealing{
		Seal: seconds(delta(sealSeconds)), Open: seconds(delta(openSeconds)),
		Seals: delta(sealedObjects), Opens: delta(openedObjects), SealedBytes: delta(sealedBytes), OpenedBytes: delta(openedBytes),
	}
}

// add adds o to s.
func (s *Sealing) add(o Sealing) {
	s.Seal += o.Seal
	s.Open += o.Open
	s.Seals += o.Seals
	s.Opens += o.Opens
	s.SealedBytes += o.SealedBytes
	s.OpenedBytes += o.OpenedBytes
}

// agentCPU is the CPU east's and west's agents used in a step's profile.
func agentCPU(p cpuProfile) time.Duration {
	var d time.Duration
	for _, c := range p.components {
		if c.component != lab.ComponentDrover {
			continue
		}
		for _, cl := range sealingAgents {
			d += c.byCluster[cl]
		}
	}
	return d
}

// countSealing adds a step's sealing and agent CPU to the run's, from the scrapes and the CPU
// profile of the step, and prints the step's.
func (r *run) countSealing(step string, before, after map[string]snapshot, cpu cpuProfile) {
	var s Sealing
	for _, c := range sealingAgents {
		s.add(sealingOf(before[c], after[c]))
	}
	agents := agentCPU(cpu)
	r.res.Sealing.add(s)
	r.res.AgentCPU += agents
	say(r.o, "%s: the agents sealed %.0f objects (%s) in %s and opened %.0f (%s) in %s, %s of their %s of CPU", step,
		s.Seals, size(s.SealedBytes), s.Seal.Round(time.Millisecond), s.Opens, size(s.OpenedBytes), s.Open.Round(time.Millisecond),
		share(s.Seal+s.Open, agents), agents.Round(100*time.Millisecond))
}

// share is part as a percentage of whole.
func share(part, whole time.Duration) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*part.Seconds()/whole.Seconds())
}

// size is a number of bytes in KiB or MiB.
func size(b float64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", b/(1<<10))
}

// sealingTime is the table's cell of the time spent sealing and opening and its share of the
// agents' CPU.
func (r *Result) sealingTime() string {
	if r.AgentCPU == 0 {
		return "-"
	}
	s := r.Sealing
	return fmt.Sprintf("%.3fs / %.3fs (%s)", s.Seal.Seconds(), s.Open.Seconds(), share(s.Seal+s.Open, r.AgentCPU))
}

// sealingVolume is the table's cell of the objects and bytes sealed and opened.
func (r *Result) sealingVolume() string {
	s := r.Sealing
	if s.Seals == 0 && s.Opens == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f, %s / %.0f, %s", s.Seals, size(s.SealedBytes), s.Opens, size(s.OpenedBytes))
}
