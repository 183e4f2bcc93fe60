package story

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-io/drover/internal/lab/records"
)

// FailoverFromReachable fails the application over from a cluster that stays up and answers
// (a person fails over from a cluster that is unhealthy but not gone). The storage forces a
// promotion while the peer is primary, so only drover keeps the two clusters from both holding
// writable primaries: the watcher, which sees both images primary or writers on both, reports
// any moment it does not. It checks that the target holds, without gaps, every record written
// on from before the failover was asked: the old primary is demoted, its last writes mirrored,
// before the target is promoted.
func (r *Run) FailoverFromReachable(ctx context.Context, from string) Step {
	to := r.other(from)
	step := Step{Action: "failover-up", From: from, To: to}
	ws, handles, err := r.writing(ctx, from)
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	asked := map[string]records.Report{}
	for pvc, h := range handles {
		if asked[pvc], err = r.report(from, h); err != nil {
			step.Err = err
			return r.record(step)
		}
	}
	began := time.Now()
	r.say("failover: asking drover to fail over to %s while %s stays up", to, from)
	if step.Err = r.failOverTo(ctx, to); step.Err != nil {
		return r.record(step)
	}
	step.Duration = time.Since(began)
	if step.Err = r.keptAll(ctx, &step, ws, asked); step.Err == nil {
		_, _, step.Err = r.writing(ctx, to)
	}
	return r.record(step)
}

// keptAll checks that the step's target holds every record each writer had written (asked)
// with no gap, and adds the records kept to step.
func (r *Run) keptAll(ctx context.Context, step *Step, ws []writer, asked map[string]records.Report) error {
	return r.onTarget(ctx, step.To, ws, func(pvc string, w writer, kept records.WriterReport) error {
		before, _ := asked[pvc].Writer(w.id)
		step.Kept += kept.LastSeq
		switch {
		case len(kept.Gaps) > 0:
			return fmt.Errorf("%s: records of %s missing on %s: %s", pvc, w.id, step.To, records.FormatRanges(kept.Gaps))
		case kept.LastSeq < before.LastSeq:
			step.Lost += before.LastSeq - kept.LastSeq
			return fmt.Errorf("%s: %s holds records of %s up to %d, but %s had written up to %d before the failover was asked",
				pvc, step.To, w.id, kept.LastSeq, step.From, before.LastSeq)
		}
		return nil
	})
}
