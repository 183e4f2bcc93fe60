package story

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Full runs the whole story of the end-to-end suite from home: protect, failover with home
// stopped, home back, failover back with the other stopped, that one back, relocate, relocate
// back, unprotect. The Postgres workload also runs a drill once protected: PostgreSQL answers in
// the sandbox's copy and pgbench's invariant holds there (a Full drill on VolSync, a readiness
// drill on mirrored volumes); in placement mode, where drover captures none of the application's
// objects, a Full drill must fail saying so, and a readiness drill passes with its dry run of
// the objects Skipped. It stops at the first failed step.
func (r *Run) Full(ctx context.Context, unprotect bool) error {
	away := r.other(r.home)
	steps := []func() Step{func() Step { return r.Protect(ctx) }}
	if r.c.Workload.isPostgres() {
		steps = append(steps, func() Step { return r.Drill(ctx, r.home) })
	}
	steps = append(steps,
		func() Step { return r.Failover(ctx, r.home) },
		func() Step { return r.Recover(ctx, r.home) },
		func() Step { return r.Failover(ctx, away) },
		func() Step { return r.Recover(ctx, away) },
		func() Step { return r.Relocate(ctx, r.home) },
		func() Step { return r.Relocate(ctx, away) },
	)
	if unprotect {
		steps = append(steps, func() Step { return r.Unprotect(ctx) })
	}
	for _, run := range steps {
		if err := run().Failure(); err != nil {
			return err
		}
	}
	return nil
}

// PrintTable writes a table of the steps: action, duration, records kept and lost, the loss
// bound of a failover and the verdict.
func PrintTable(w io.Writer, steps []Step) { PrintTableOf(w, steps, "RECORDS") }

// PrintTableOf is PrintTable counting units of the workload's data: RECORDS of the lab's
// writer, TRANSACTIONS of the Postgres workload's pgbench.
func PrintTableOf(w io.Writer, steps []Step, unit string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ACTION\tFROM → TO\tDURATION\t%[1]s KEPT\t%[1]s LOST\tEXPECTED LOSS BOUND\tCHECK\n", unit)
	for _, s := range steps {
		kept, lost, bound := "-", "-", "-"
		switch {
		case strings.Contains(s.Action, "failover"):
			kept, lost = fmt.Sprint(s.Kept), fmt.Sprint(s.Lost)
			bound = fmt.Sprintf("writes of the last %s", s.LossBound.Round(100*time.Millisecond))
		case strings.Contains(s.Action, "relocate"):
			kept, lost, bound = fmt.Sprint(s.Kept), fmt.Sprint(s.Lost), "0 (no loss allowed)"
		case s.Note != "":
			bound = s.Note
		case s.Action == "drill":
			// A drill's duration is its RTO, its records those seen in the sandbox's copies, its
			// bound the RPO it measured.
			kept, bound = fmt.Sprintf("%d in the sandbox", s.Kept), fmt.Sprintf("RPO %s", s.LossBound)
		}
		check := "ok"
		if s.Err != nil {
			check = "FAILED"
		}
		if s.Check != "" {
			check += "; " + s.Check
		}
		fmt.Fprintf(tw, "%s\t%s → %s\t%s\t%s\t%s\t%s\t%s\n", s.Action, s.From, s.To, s.Duration.Round(10*time.Millisecond), kept, lost, bound, check)
	}
	_ = tw.Flush()
}
