package story

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab/storage"
)

// returnGrace is how long after a lost cluster comes back both clusters may still run the
// application: the old primary's workload restarts with its cluster and runs until drover,
// which demotes it first thing, has removed it (DESIGN.md rule 7: demoted the moment it is
// reachable again). Its writes go to a stale primary and are discarded by the resync. A healed
// partition counts as a return.
const returnGrace = 45 * time.Second

// pollInterval is how often the story looks again at what it waits for.
const pollInterval = 500 * time.Millisecond

// watch checks, until ctx ends, that the two clusters never both run a writable primary of the
// application: writer pods Running on both, or (volrep) one image primary on both, while both
// clusters are up and the last to return (or a drover process killed during its grace,
// DroverRestarted) has been up longer than returnGrace. During a
// partition drover cannot know, and the cut-off cluster keeps its primary: the watcher reports
// each such overlap once (Splits) instead of counting it a violation.
func (r *Run) watch(ctx context.Context) {
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollInterval):
		}
		both, what := r.twoPrimaries(ctx)
		r.mu.Lock()
		if !both {
			since = time.Time{}
			r.mu.Unlock()
			continue
		}
		began := since.IsZero()
		if began {
			since = time.Now()
		}
		if d := time.Since(since); d > r.overlap {
			r.overlap = d
		}
		switch {
		case len(r.cut) > 0:
			if began {
				r.splits = append(r.splits, fmt.Sprintf("%s at %s, while %s is partitioned", what, time.Now().Format(time.TimeOnly),
					strings.Join(sortedKeys(r.cut), ", ")))
			}
		case time.Since(r.lastBackLocked()) > returnGrace:
			r.violations = append(r.violations, fmt.Sprintf("%s at %s", what, time.Now().Format(time.TimeOnly)))
		}
		r.mu.Unlock()
	}
}

// lastBackLocked is when the last cluster came back (started or healed), or drover's process
// killed during that return's grace ran again, whichever is later; r.mu is held.
func (r *Run) lastBackLocked() time.Time {
	last := r.droverBack
	for _, t := range r.back {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// DroverRestarted tells the watcher that a drover process (the hub, or an agent) killed at
// killed runs again since running. Killed while a returned cluster's grace runs, it is drover
// coming back too, and the grace counts from its restart: a successor does nothing until it
// holds its Lease, which a SIGKILLed holder never released (a whole lease duration, 15 s, from
// the successor's first look), so the returned cluster's writers wait for it. A kill outside
// such a window changes nothing: two primaries then are a violation at once.
func (r *Run) DroverRestarted(killed, running time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.lastBackLocked()
	if last.IsZero() || killed.After(last.Add(returnGrace)) {
		return
	}
	if running.After(r.droverBack) {
		r.droverBack = running
	}
}

// Splits are the overlaps of two writable primaries the watcher saw during a partition, one
// line each: what drover cannot prevent while it cannot reach the cut-off cluster.
func (r *Run) Splits() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.splits)
}

// twoPrimaries reports whether both clusters are up and both run the application or hold one of
// its images as primary, and says which.
func (r *Run) twoPrimaries(ctx context.Context) (bool, string) {
	r.mu.Lock()
	anyDown := len(r.down) > 0
	r.mu.Unlock()
	if anyDown {
		return false, ""
	}
	clusters := sortedKeys(r.env.Clusters)
	running := 0
	for _, c := range clusters {
		ws, err := r.writers(ctx, c)
		if err != nil {
			return false, ""
		}
		if len(ws) > 0 {
			running++
		}
	}
	if running == len(clusters) {
		return true, "the application's writers run on both clusters"
	}
	handles, err := r.volumes(ctx, clusters[0])
	if err != nil {
		return false, ""
	}
	for pvc, h := range handles {
		if r.imageRole(clusters[0], h) == storage.RolePrimary && r.imageRole(clusters[1], h) == storage.RolePrimary {
			return true, fmt.Sprintf("image %s of PVC %s is primary on both clusters", h, pvc)
		}
	}
	return false, ""
}
