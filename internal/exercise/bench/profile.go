package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

// A step's work profile says where drover's workers spent a step, from its metrics scraped
// before and after: how many passes each controller made and how long they took in all, how
// long the groups waited in the queue for a worker, and, for the agents, the time of each phase
// of their passes (drover_vrg_phase_duration_seconds). A step that is slow with little work
// waits on something; one whose work fills the workers is bounded by them (or by the CPU under
// them); the phases name the work.

const (
	phaseDuration = "drover_vrg_phase_duration_seconds"
	queueDuration = "workqueue_queue_duration_seconds"
	// profilePhases is how many phases a profile line names, the longest first.
	profilePhases = 6
)

// phaseTime is the time the agent spent in one phase over a step.
type phaseTime struct {
	phase   string
	seconds float64
	runs    float64
}

// workProfile is one controller's work over a step.
type workProfile struct {
	controller string
	passes     float64
	busy       time.Duration
	waitP50    time.Duration
	waitP99    time.Duration
	phases     []phaseTime
}

// profileOf computes the work of controller between two scrapes of one process. A process that
// restarted in between (east's agent with its cluster) counts from its start: its counters
// began again.
func profileOf(controller string, before, after snapshot) workProfile {
	match := reconcileOf(controller)
	sum0, n0 := before.histogramTotals(reconcileTime, match)
	sum1, n1 := after.histogramTotals(reconcileTime, match)
	if n1 < n0 {
		before, sum0, n0 = snapshot{}, 0, 0
	}
	byName := func(l map[string]string) bool { return l["name"] == controller }
	waitBefore, waitAfter := before.buckets(queueDuration, byName), after.buckets(queueDuration, byName)
	w := workProfile{
		controller: controller, passes: n1 - n0, busy: seconds(sum1 - sum0),
		waitP50: seconds(histogramQuantile(0.5, waitBefore, waitAfter)), waitP99: seconds(histogramQuantile(0.99, waitBefore, waitAfter)),
	}
	if f := after[phaseDuration]; f != nil {
		for _, m := range f.GetMetric() {
			phase := labelsOf(m)["phase"]
			of := func(l map[string]string) bool { return l["phase"] == phase }
			s0, c0 := before.histogramTotals(phaseDuration, of)
			s1, c1 := after.histogramTotals(phaseDuration, of)
			if c1 > c0 {
				w.phases = append(w.phases, phaseTime{phase: phase, seconds: s1 - s0, runs: c1 - c0})
			}
		}
	}
	slices.SortFunc(w.phases, func(a, b phaseTime) int {
		return cmp.Or(cmp.Compare(b.seconds, a.seconds), cmp.Compare(a.phase, b.phase))
	})
	return w
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// String is the profile as one line: passes, work, queue wait and the longest phases.
func (w workProfile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f passes, %s of work, queue wait p50 %s p99 %s", w.passes, w.busy.Round(10*time.Millisecond),
		w.waitP50.Round(time.Millisecond), w.waitP99.Round(time.Millisecond))
	phases := make([]string, 0, len(w.phases))
	for _, p := range w.phases {
		phases = append(phases, fmt.Sprintf("%s %s (%.0f)", p.phase, seconds(p.seconds).Round(10*time.Millisecond), p.runs))
	}
	writeLargest(&b, "; by phase: ", phases, profilePhases)
	return b.String()
}

// profiled is a process of drover and the controller whose work it does.
var profiled = []struct{ cluster, controller string }{
	{lab.Hub, "drplacementcontrol"}, {lab.East, "volumereplicationgroup"}, {lab.West, "volumereplicationgroup"},
}

// scrapeDrover scrapes the hub and both agents; a process that does not answer (east stopped)
// is left out.
func (r *run) scrapeDrover(ctx context.Context) map[string]snapshot {
	out := map[string]snapshot{}
	for _, p := range profiled {
		if s, err := r.p.drover(ctx, p.cluster); err == nil {
			out[p.cluster] = s
		}
	}
	return out
}

// profileStep prints the work profile of each drover process over a step, from the scrapes
// before and after it. A process not scraped at both ends is left out, with the reason.
func (r *run) profileStep(step string, before, after map[string]snapshot) {
	for _, p := range profiled {
		b, a := before[p.cluster], after[p.cluster]
		switch {
		case a == nil:
			say(r.o, "%s: %s's drover: no metrics at the step's end", step, p.cluster)
		case b == nil:
			// Stopped at the start (east, recovering): all it did since its start counts.
			say(r.o, "%s: %s's drover (started during the step): %s", step, p.cluster, profileOf(p.controller, snapshot{}, a))
		default:
			say(r.o, "%s: %s's drover: %s", step, p.cluster, profileOf(p.controller, b, a))
		}
	}
}

// writeLargest writes lead and then the first shown of items (the largest first), separated by
// commas, and how many more there are; nothing when items is empty.
func writeLargest(b *strings.Builder, lead string, items []string, shown int) {
	for i, it := range items {
		if i == shown {
			fmt.Fprintf(b, ", %d more", len(items)-i)
			return
		}
		if i == 0 {
			b.WriteString(lead)
		} else {
			b.WriteString(", ")
		}
		b.WriteString(it)
	}
}
