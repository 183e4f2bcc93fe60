package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/story"
)

// PostgreSQL 15 as the story's application, on real processes: postgres over its PVC and a
// pgbench sidecar committing continuously. Protected, drilled on west (the copy started in a
// sandbox, checked by the check Job PostgreSQL's drills use: it answers and pgbench's invariant
// holds), failed over with east stopped, recovered,
// relocated back; after the failover and the relocation the judge checks the target (the story's
// Postgres judge): PostgreSQL answers, having started from its copy (cleanly after a
// relocation), pgbench's invariant holds, pg_amcheck finds nothing, and no
// transaction pgbench logged committed is missing: none on the relocation, none committed
// before the last group sync on the failover.
func TestPostgreSQLUnderPgbenchFailsOverAndRelocatesByItsOwnInvariants(t *testing.T) {
	if _, err := pgsql.Find(); err != nil {
		t.Fatalf("the PostgreSQL workload needs PostgreSQL on this machine: %v", err)
	}
	for _, c := range []story.Case{
		// make test's one PostgreSQL case; the e2e matrix (make test-e2e) runs it on both
		// backends in both modes, with a drill whose check Job runs pg_isready and pgbench's
		// invariant in the sandbox (story.Run.Full). make test's drills are the agent's and the
		// hub's (internal/agent/drill, internal/hub).
		// It runs with the workload's recipe (story.PostgresRecipe): a CHECKPOINT before the
		// final sync, pg_ctl stop -m fast before the relocation stops the database, a migration
		// Job and the invariant's check Job once it is Ready on the target.
		{Workload: story.Postgres, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Namespace: "postgres-volsync", Hooks: true},
	} {
		c.Mode = story.SelfContained
		t.Run(c.Policy, func(t *testing.T) {
			g := newG(t)
			ctx := context.Background()
			r := startCase(ctx, g, t, c, nil)
			defer func() {
				g.Expect(r.Close()).To(Succeed())
				story.PrintTableOf(os.Stderr, r.Steps, "TRANSACTIONS")
			}()
			runSteps(t, g, func() story.Step { return r.Protect(ctx) })
			failover := r.Failover(ctx, lab.East)
			g.Expect(failover.Err).NotTo(HaveOccurred(), "failover east→west")
			t.Logf("failover east→west in %s: kept %d, lost %d transactions, the last group sync %s before east's loss",
				failover.Duration, failover.Kept, failover.Lost, failover.LossBound.Round(time.Millisecond))
			runSteps(t, g, func() story.Step { return r.Recover(ctx, lab.East) })
			relocate := r.Relocate(ctx, lab.West)
			g.Expect(relocate.Err).NotTo(HaveOccurred(), "relocate west→east")
			t.Logf("relocate west→east in %s: kept %d, lost %d transactions", relocate.Duration, relocate.Kept, relocate.Lost)

			js := r.PostgresJudgements()
			g.Expect(js).To(HaveLen(2))
			for _, j := range js {
				t.Logf("%s %s→%s: %s; %s; %d runs committed %d, %d present, %d lost, %d committed before the recovery point",
					j.Action, j.From, j.To, j.Recovery, j.Sums, j.Runs, j.Committed, j.Present, j.Lost, j.MustKeep)
				g.Expect(j.Runs).To(BeNumerically(">", 0))
				g.Expect(j.Committed).To(BeNumerically(">", 0))
			}
			// A stopped cluster's lab kubelet stops its pods with a short grace (5 s): a pgbench run
			// that ends within it lets PostgreSQL shut down cleanly before the loss, else both are
			// killed and the target recovers from a crash.
			g.Expect(js[0].Recovery).To(BeElementOf("crash recovery", "clean start"), "the failover's target started from the copy")
			// What was committed before the last group sync must be on the target; that may be
			// nothing, when pgbench's run began after it (a run lasts 10 s, the interval is 5 s).
			g.Expect(js[0].Present).To(BeNumerically(">=", js[0].MustKeep), "the failover keeps what was committed before the last group sync")
			g.Expect(js[1].Recovery).To(Equal("clean start"), "the relocation's source shut PostgreSQL down before the final sync")
			g.Expect(js[1].Lost).To(BeZero())
		})
	}
}
