package story

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-io/drover/internal/lab/records"
)

// Loss is what one story learned of a cluster lost under it (LoseTogether), for the failover
// that follows to be checked against: the writers that ran there, what each had written in
// each of its PVCs at the loss, the last group sync before it and the time from that sync to
// the loss.
type Loss struct {
	from     string
	ws       []writer
	wrote    map[string]records.Report
	lastSync time.Time
	bound    time.Duration
}

// LoseTogether loses cluster from under the stories of several applications at once with
// lose, which stops it and whatever goes with it (the hub): for each story it first checks
// that the writers write on from and waits for a group sync begun after that, then calls lose
// and reads what each writer had written there. Each story counts from as down, so that its
// Close starts it again. The failovers that follow are checked against the returned Losses, in
// the order of runs (FailoverWithoutHub).
func LoseTogether(ctx context.Context, runs []*Run, from string, lose func() error) ([]*Loss, error) {
	losses := make([]*Loss, len(runs))
	handles := make([]map[string]string, len(runs))
	for i, r := range runs {
		ws, hs, lastSync, err := r.writingAndSynced(ctx, from)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.c.Namespace, err)
		}
		losses[i], handles[i] = &Loss{from: from, ws: ws, wrote: map[string]records.Report{}, lastSync: lastSync}, hs
	}
	for _, r := range runs {
		r.say("lose: stopping %s (its control plane, storage and agent) and what goes with it", from)
		r.mu.Lock()
		r.down[from] = true
		r.mu.Unlock()
	}
	if err := lose(); err != nil {
		return nil, fmt.Errorf("failed to lose %s: %w", from, err)
	}
	lost := time.Now()
	for i, r := range runs {
		losses[i].bound = lost.Sub(losses[i].lastSync)
		r.say("lose: %s lost %s after the last group sync", from, losses[i].bound.Round(100*time.Millisecond))
		for pvc, h := range handles[i] {
			rep, err := r.report(from, h)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.c.Namespace, err)
			}
			losses[i].wrote[pvc] = rep
		}
	}
	return losses, nil
}

// FailoverWithoutHub fails the application over from the cluster of loss with failover, which
// does it with no hub (drover failover --without-hub) and returns once the target's group is
// primary, and checks it as Failover does: every record up to the last group sync before the
// loss is on the target, none is missing in between, none is from after the loss and no more
// is lost than was written since that sync; then that the writers write on the target. The
// target must bring the application up itself (self-contained mode): no hub, no GitOps tool.
func (r *Run) FailoverWithoutHub(ctx context.Context, loss *Loss, failover func(ctx context.Context) error) Step {
	to := r.other(loss.from)
	step := Step{Action: "failover --without-hub", From: loss.from, To: to, LossBound: loss.bound}
	began := time.Now()
	r.say("failover: to %s without the hub", to)
	if err := failover(ctx); err != nil {
		step.Err = err
		return r.record(step)
	}
	step.Duration = time.Since(began)
	step.Err = r.checkFailover(ctx, &step, loss.ws, loss.wrote, loss.lastSync, "its loss")
	if step.Err == nil {
		_, _, step.Err = r.writing(ctx, to)
	}
	return r.record(step)
}

// Case is the story's case.
func (r *Run) Case() Case { return r.c }
