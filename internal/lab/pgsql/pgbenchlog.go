package pgsql

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scale is the pgbench scale of the lab's databases: 100,000 accounts, 10 tellers, 1 branch.
const Scale = 1

// TaggedTPCB is pgbench's built-in tpcb-like transaction with one change: the history row it
// inserts carries the pgbench run's id (-D run=<id>) in pgbench_history.filler, which pgbench
// leaves NULL. pgbench substitutes :run textually, inside the quotes too.
var TaggedTPCB = fmt.Sprintf(`\set aid random(1, %d)
\set bid random(1, %d)
\set tid random(1, %d)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime, filler) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP, ':run');
END;
`, 100000*Scale, Scale, 10*Scale)

// RunLog is what one pgbench run logged: the time each committed transaction completed, in
// the order logged.
type RunLog struct {
	// ID is the run's id: its start, in nanoseconds since the epoch.
	ID string
	// Committed are the completion times of the transactions the run logged.
	Committed []time.Time
}

// Started is when the run began, read from its id.
func (l RunLog) Started() time.Time {
	ns, _ := strconv.ParseInt(l.ID, 10, 64)
	return time.Unix(0, ns)
}

// CommittedBy counts the transactions that completed before t.
func (l RunLog) CommittedBy(t time.Time) int64 {
	var n int64
	for _, c := range l.Committed {
		if c.Before(t) {
			n++
		}
	}
	return n
}

// ReadRuns reads the pgbench logs in dir, by run: a run with prefix <dir>/<id> writes
// <id>.<pid> (and <id>.<pid>.<thread> with several threads). Lines whose latency is not a number
// (a skipped or failed transaction) are not commits. A run killed with its pod loses what stdio
// still buffered (a few KiB): its log is a lower bound of what it committed. A missing dir holds
// no run.
func ReadRuns(dir string) (map[string]*RunLog, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*RunLog{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read pgbench's logs in %s: %w", dir, err)
	}
	runs := map[string]*RunLog{}
	for _, e := range entries {
		id, _, ok := strings.Cut(e.Name(), ".")
		if !ok || e.IsDir() || !isRunID(id) {
			continue
		}
		run := runs[id]
		if run == nil {
			run = &RunLog{ID: id}
			runs[id] = run
		}
		if err := readRunLog(filepath.Join(dir, e.Name()), run); err != nil {
			return nil, err
		}
	}
	for _, run := range runs {
		slices.SortFunc(run.Committed, func(a, b time.Time) int { return a.Compare(b) })
	}
	return runs, nil
}

func isRunID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil && len(s) >= 18
}

// readRunLog appends the commits of one log file: lines "client_id transaction_no time
// script_no time_epoch time_us [schedule_lag] [retries]", time the latency in microseconds and
// time_epoch.time_us the completion (PostgreSQL 15's pgbench, "Per-Transaction Logging"). A last
// line without its newline was cut by a kill and is not counted.
func readRunLog(path string, run *RunLog) error {
	f, err := os.Open(path) //nolint:gosec // the lab's own directory
	if err != nil {
		return fmt.Errorf("failed to read pgbench log %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) { // a partial last line is not a commit
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read pgbench log %s: %w", path, err)
		}
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		if _, err := strconv.ParseInt(fields[2], 10, 64); err != nil {
			continue
		}
		sec, err1 := strconv.ParseInt(fields[4], 10, 64)
		us, err2 := strconv.ParseInt(fields[5], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("failed to read pgbench log %s: line %q has no completion time", path, strings.TrimSpace(line))
		}
		run.Committed = append(run.Committed, time.Unix(sec, us*1000))
	}
}
