package story

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-io/drover/internal/lab/storage"
)

// returnGrace is how long after a lost cluster comes back both clusters may still run the
// application: the old primary's workload restarts with its cluster and runs until drover,
// which demotes it first thing, has removed it (DESIGN.md rule 7: demoted the moment it is
// reachable again). Its writes go to a stale primary and are discarded by the resync.
const returnGrace = 45 * time.Second

// pollInterval is how often the story looks again at what it waits for.
const pollInterval = 500 * time.Millisecond

// watch checks, until ctx ends, that the two clusters never both run a writable primary of the
// application: writer pods Running on both, or (volrep) one image primary on both, while both
// clusters are up and the last to return has been up longer than returnGrace.
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
		if since.IsZero() {
			since = time.Now()
		}
		if d := time.Since(since); d > r.overlap {
			r.overlap = d
		}
		lastBack := time.Time{}
		for _, t := range r.back {
			if t.After(lastBack) {
				lastBack = t
			}
		}
		if time.Since(lastBack) > returnGrace {
			r.violations = append(r.violations, fmt.Sprintf("%s at %s", what, time.Now().Format(time.TimeOnly)))
		}
		r.mu.Unlock()
	}
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
