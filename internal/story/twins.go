package story

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// TornTwin is a writer whose volumes a failover's target holds from different instants: its
// twin records (records.CheckTwins: record n committed to A, then to B) break B ≤ A ≤ B + 1
// there. Without a consistency group each volume of an application fails over from its
// own last copy (a mirror snapshot per VolumeReplication, a transfer per ReplicationSource), so
// a failover of an application that writes across its volumes may tear it with no fault
// anywhere. A relocation, whose final sync copies volumes no process writes any more, never may.
type TornTwin struct {
	// Pod and Writer name the writer; PVCA is the volume it writes first, PVCB the next.
	Pod, Writer string
	PVCA, PVCB  string
	// LastA and LastB are the last records of each volume on the target, WroteA and WroteB when
	// the writer wrote them: the instants each copy was taken at, to the writer's interval.
	LastA, LastB   uint64
	WroteA, WroteB time.Time
}

// Records are the twin records the target breaks: in B without their twin in A (B ahead of A),
// or those A went past while B lacks them (A more than one record ahead of B).
func (t TornTwin) Records() records.Range {
	if t.LastB > t.LastA {
		return records.Range{First: t.LastA + 1, Last: t.LastB}
	}
	return records.Range{First: t.LastB + 1, Last: t.LastA - 1}
}

// String says what the target holds, in a line.
func (t TornTwin) String() string {
	apart, when := t.WroteB.Sub(t.WroteA).Round(time.Millisecond), "later"
	if apart < 0 {
		apart, when = -apart, "earlier"
	}
	missing := t.PVCA
	if t.LastA > t.LastB {
		missing = t.PVCB
	}
	return fmt.Sprintf("%s: %s ends at record %d (written %s), %s at record %d (written %s, %s %s): records %s lack their twin in %s",
		t.Pod, t.PVCA, t.LastA, t.WroteA.Format("15:04:05.000"), t.PVCB, t.LastB, t.WroteB.Format("15:04:05.000"), apart, when,
		t.Records(), missing)
}

// tornTwins reads, on a failover's target to, the records of every writer of ws that writes
// more than one volume, pairs its volumes in the order it writes them (its status on from, the
// source) and returns those whose twin order the target breaks (records.CheckTwins). Breaking
// it is not a failure of the failover of volumes no consistency group holds (TornTwin); the
// step reports it.
func (r *Run) tornTwins(ctx context.Context, from, to string, ws []writer) ([]TornTwin, error) {
	var twins []writer
	for _, w := range ws {
		if len(w.pvcs) > 1 {
			twins = append(twins, w)
		}
	}
	if len(twins) == 0 {
		return nil, nil
	}
	handles, err := r.boundVolumes(ctx, to, twins)
	if err != nil {
		return nil, err
	}
	var torn []TornTwin
	var errs []error
	for _, w := range twins {
		st, err := storage.ReadWriterStatus(filepath.Clean(r.env.DataDir(from)), r.c.Namespace, w.pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var prev *records.WriterReport
		prevPVC := ""
		for _, v := range st.Volumes {
			h, ok := handles[v.PVC]
			if !ok {
				errs = append(errs, fmt.Errorf("PVC %s, which %s writes, is not Bound on %s", v.PVC, w.pod, to))
				break
			}
			rep, err := r.report(to, h)
			if err != nil {
				errs = append(errs, err)
				break
			}
			got, _ := rep.Writer(w.id)
			if prev != nil {
				pair := TornTwin{Pod: w.pod, Writer: w.id, PVCA: prevPVC, PVCB: v.PVC,
					LastA: prev.LastSeq, LastB: got.LastSeq, WroteA: prev.LastWrite, WroteB: got.LastWrite}
				var te *records.TwinError
				if errors.As(records.CheckTwins(*prev, got), &te) {
					torn = append(torn, pair)
				} else {
					r.say("failover: %s holds %s's volumes in twin order: %s ends at record %d (written %s), %s at record %d (written %s)",
						to, w.pod, pair.PVCA, pair.LastA, pair.WroteA.Format("15:04:05.000"), pair.PVCB, pair.LastB, pair.WroteB.Format("15:04:05.000"))
				}
			}
			prev, prevPVC = &got, v.PVC
		}
	}
	return torn, errors.Join(errs...)
}

// judgeTwins adds to a failover's step the writers whose twin records its target tore
// (tornTwins), says each, and names them in the step's check.
func (r *Run) judgeTwins(ctx context.Context, step *Step, ws []writer) error {
	torn, err := r.tornTwins(ctx, step.From, step.To, ws)
	if err != nil {
		return err
	}
	step.TornTwins = torn
	pods := 0
	for _, w := range ws {
		if len(w.pvcs) > 1 {
			pods++
		}
	}
	if pods == 0 {
		return nil
	}
	if len(torn) == 0 {
		return nil
	}
	lines := make([]string, len(torn))
	for i, t := range torn {
		lines[i] = t.String()
	}
	r.say("failover: each volume failed over from its own instant (no consistency group); the twin order is broken on %s for %s",
		step.To, strings.Join(lines, "; "))
	step.Check = fmt.Sprintf("twins torn in %d of %d pods: each volume from its own instant, no consistency group", len(torn), pods)
	return nil
}
