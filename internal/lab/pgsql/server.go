package pgsql

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Server is a PostgreSQL server the judge reaches over TCP (a pod's IP), as the superuser
// postgres with trust authentication (the lab's pods run initdb --auth=trust; a client on this
// machine connects from 127.0.0.1, which initdb's pg_hba.conf trusts).
type Server struct {
	Install
	Host string
	Port int
}

// queryTimeout bounds one psql, pg_isready or pg_amcheck.
const queryTimeout = time.Minute

// run runs one of PostgreSQL's client programs against the server and returns its output.
func (s Server) run(ctx context.Context, program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	args = append([]string{"-h", s.Host, "-p", strconv.Itoa(s.port()), "-U", User}, args...)
	cmd := exec.CommandContext(ctx, s.Program(program), args...) //nolint:gosec // PostgreSQL's own programs
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = []string{"PGCONNECT_TIMEOUT=5", "PGAPPNAME=drover-lab-judge"}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s on %s failed (%w): %s", program, s.Host, err, strings.TrimSpace(errOut.String()+" "+out.String()))
	}
	return out.String(), nil
}

func (s Server) port() int {
	if s.Port == 0 {
		return 5432
	}
	return s.Port
}

// Ready says whether the server accepts connections (pg_isready).
func (s Server) Ready(ctx context.Context) error {
	_, err := s.run(ctx, "pg_isready", "-d", "postgres")
	return err
}

// Query runs one SQL statement in database postgres and returns its rows, fields separated by
// "|" (psql's unaligned output); no field may hold white space.
func (s Server) Query(ctx context.Context, sql string) ([]string, error) {
	out, err := s.run(ctx, "psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Sums are the balances pgbench's invariant compares: every transaction adds its delta to one
// account, one teller, one branch and one history row, so the four sums are equal.
type Sums struct {
	Accounts, Tellers, Branches, History int64
}

// Holds says whether the invariant holds.
func (s Sums) Holds() bool {
	return s.Accounts == s.Tellers && s.Tellers == s.Branches && s.Branches == s.History
}

func (s Sums) String() string {
	return fmt.Sprintf("accounts %d, tellers %d, branches %d, history %d", s.Accounts, s.Tellers, s.Branches, s.History)
}

// Sums reads the four sums in one statement, one snapshot: the invariant holds while pgbench
// writes.
func (s Server) Sums(ctx context.Context) (Sums, error) {
	rows, err := s.Query(ctx, `SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts),
		(SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers), (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches),
		(SELECT coalesce(sum(delta), 0) FROM pgbench_history)`)
	if err != nil {
		return Sums{}, err
	}
	var n [4]int64
	if len(rows) != 1 {
		return Sums{}, fmt.Errorf("the invariant query on %s returned %q", s.Host, rows)
	}
	fields := strings.Split(rows[0], "|")
	if len(fields) != len(n) {
		return Sums{}, fmt.Errorf("the invariant query on %s returned %q", s.Host, rows[0])
	}
	for i := range n {
		if n[i], err = strconv.ParseInt(fields[i], 10, 64); err != nil {
			return Sums{}, fmt.Errorf("the invariant query on %s returned %q: %w", s.Host, rows[0], err)
		}
	}
	return Sums{Accounts: n[0], Tellers: n[1], Branches: n[2], History: n[3]}, nil
}

// HistoryByRun counts pgbench_history's rows by the run that inserted them (filler, TaggedTPCB);
// rows without a tag count under "".
func (s Server) HistoryByRun(ctx context.Context) (map[string]int64, error) {
	rows, err := s.Query(ctx, `SELECT coalesce(rtrim(filler), ''), count(*) FROM pgbench_history GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, row := range rows {
		run, count, ok := strings.Cut(row, "|")
		n, err := strconv.ParseInt(count, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("the history query on %s returned %q", s.Host, row)
		}
		out[run] += n
	}
	return out, nil
}

// Amcheck runs pg_amcheck on database postgres, every heap and B-tree index, each index checked
// to hold every heap tuple (--heapallindexed), installing the amcheck extension when missing
// (without it pg_amcheck checks nothing). It returns what pg_amcheck reported when it found
// corruption or failed.
func (s Server) Amcheck(ctx context.Context) error {
	_, err := s.run(ctx, "pg_amcheck", "--install-missing", "--heapallindexed", "-d", "postgres")
	return err
}
