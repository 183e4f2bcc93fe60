package story

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/pgsql"
)

// pgRun is a run of pgbench started at start that committed one transaction at each of done.
func pgRun(start time.Time, done ...time.Time) *pgsql.RunLog {
	return &pgsql.RunLog{ID: strconv.FormatInt(start.UnixNano(), 10), Committed: done}
}

func TestThePostgresJudgeComparesEachRunsRowsWithWhatItsLogShowsCommitted(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 16, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	early, late := pgRun(at(1), at(2), at(3), at(4)), pgRun(at(5), at(6), at(7), at(8))
	before := pgRun(at(-100), at(-99)) // a run of an earlier story in the same directory
	runs := map[string]*pgsql.RunLog{early.ID: early, late.ID: late, before.ID: before}
	targetOwn := strconv.FormatInt(at(20).UnixNano(), 10)
	for _, tc := range []struct {
		name      string
		rows      map[string]int64
		by        time.Time
		kept      map[string]int64
		lost      int64
		wantError string
	}{
		{name: "a relocation that kept everything passes",
			rows: map[string]int64{early.ID: 3, late.ID: 3, targetOwn: 7}},
		{name: "a relocation that lost one transaction fails",
			rows: map[string]int64{early.ID: 3, late.ID: 2}, lost: 1, wantError: "committed 3 transactions"},
		{name: "a failover loses what was committed after the recovery point",
			rows: map[string]int64{early.ID: 3, late.ID: 1}, by: at(7), lost: 2},
		{name: "a failover that lost a transaction committed before the recovery point fails",
			rows: map[string]int64{early.ID: 2, late.ID: 0}, by: at(7), lost: 4, wantError: "before 16:00:07"},
		{name: "rows beyond the log (unflushed when the run was killed) are kept",
			rows: map[string]int64{early.ID: 4, late.ID: 3}, by: at(7)},
		{name: "a run judged before holds its rows",
			rows: map[string]int64{early.ID: 3, late.ID: 3, "1796573445639927497": 9}, kept: map[string]int64{"1796573445639927497": 10},
			wantError: "held 10 rows before"},
		{name: "rows of a run nobody ran in the period fail (a discarded primary's)",
			rows: map[string]int64{early.ID: 3, late.ID: 3, strconv.FormatInt(at(-50).UnixNano(), 10): 4}, wantError: "which neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Run{t0: t0, pg: pgState{kept: map[string]int64{}}}
			for id, n := range tc.kept {
				r.pg.kept[id] = n
			}
			j := PostgresJudgement{From: "east", To: "west"}
			errs := r.pgCompare(&j, runs, tc.rows, tc.by, at(10))
			if tc.wantError == "" {
				g.Expect(errs).To(BeEmpty())
			} else {
				g.Expect(errs).To(ContainElement(MatchError(ContainSubstring(tc.wantError))))
			}
			g.Expect(j.Runs).To(Equal(2), "the runs of the period, not the earlier one")
			g.Expect(j.Committed).To(BeEquivalentTo(6))
			g.Expect(j.Lost).To(Equal(tc.lost))
			g.Expect(r.pg.kept).To(HaveKeyWithValue(early.ID, tc.rows[early.ID]), "what the target holds now is what later primaries must hold")
		})
	}
}

func TestThePostgresJudgeFailsAtOnceOnAServerThatPanickedAtItsLastStart(t *testing.T) {
	dir := t.TempDir()
	r := &Run{env: Env{LogDir: func(string) string { return dir }}, c: Case{Namespace: "db"}}
	t0 := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	start := func(at time.Time, lines ...string) string {
		return "\n==== " + at.Format(time.RFC3339) + " starting postgres -D /var/lib/postgresql/data/pgdata\n" + strings.Join(lines, "\n") + "\n"
	}
	panicked := "2026-12-08 01:00:05.123 UTC [42] PANIC:  could not locate a valid checkpoint record"
	for _, tc := range []struct {
		name, log string
		want      string
	}{
		{name: "a start since the step that logged a PANIC is its failure",
			log:  start(t0.Add(-time.Minute), "LOG:  database system is ready") + start(t0, "LOG:  database system was interrupted", panicked),
			want: panicked},
		{name: "a PANIC of a start before the step is not this step's",
			log: start(t0.Add(-time.Minute), panicked)},
		{name: "a later start that recovered is not a failure",
			log: start(t0, panicked) + start(t0.Add(time.Second), "LOG:  automatic recovery in progress")},
		{name: "no log, no failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path := kubelet.LogPath(dir, "db", pgPod, "postgres")
			_ = os.Remove(path)
			if tc.log != "" {
				g.Expect(os.WriteFile(path, []byte(tc.log), 0o600)).To(Succeed())
			}
			g.Expect(r.pgPanic("west", t0.Add(300*time.Millisecond))).To(Equal(tc.want))
		})
	}
}
