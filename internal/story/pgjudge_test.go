package story

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

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
