package story

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/pgsql"
)

// The judge of the Postgres workload. pgbench tags each history row with its run's id and logs
// every transaction it committed, per run, in the cluster's lab storage directory
// (PgbenchLogDir), which outlives the pod and the cluster's stop. After a failover or a
// relocation from one cluster to the other, on the target:
//
//   - PostgreSQL answers (pg_isready), having recovered the copy of the source's data
//     directory (crash recovery after a failover, a clean start after a relocation: its log);
//   - pgbench's invariant holds: sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta);
//   - pg_amcheck finds no corruption in any table or index;
//   - every run judged before holds exactly the rows it held then;
//   - each run the source ran in its period holds at least every transaction its log shows
//     committed: all of them after a relocation; after a failover, all those committed before
//     the last group sync (the recovery point), the rest counted lost;
//   - no row comes from another run, except the target's own, begun since the step began.
//
// A run killed with its pod (a failover) leaves what stdio still buffered unlogged, so its log is
// a lower bound of what it committed: rows beyond it count as kept, not as a fault. A relocation
// stops pgbench by SIGTERM, on which the sidecar lets the run end and flush its log.

// pgState is what the judge learned in the steps before.
type pgState struct {
	// since is when the current primary's period began (the step that made it primary began):
	// its runs start after; zero before the first step, when the story's start counts.
	since time.Time
	// kept are the rows of every run judged so far, by run id: what every later primary holds.
	kept map[string]int64
	// judgements are the verdicts so far.
	judgements []PostgresJudgement
	// fastShutdowns is how many fast shutdowns the relocation's source had logged when it began
	// (pgFastShutdowns): its stop-db hook logs one more.
	fastShutdowns int
}

// PostgresJudgement is what the judge found on a step's target.
type PostgresJudgement struct {
	Action, From, To string
	// Recovery is what the target's server logged when it started on the copy: "crash
	// recovery" or "clean start", with its line.
	Recovery string
	Sums     pgsql.Sums
	// Runs is how many pgbench runs of the source's period were judged; Committed what their
	// logs show committed, Present their rows on the target, Lost what is missing; MustKeep what
	// they committed before the recovery point (all of Committed on a relocation).
	Runs                               int
	Committed, Present, Lost, MustKeep int64
}

// PostgresJudgements are the judge's verdicts of the story's steps so far.
func (r *Run) PostgresJudgements() []PostgresJudgement {
	return append([]PostgresJudgement(nil), r.pg.judgements...)
}

// pgPod is the Postgres workload's one pod.
const pgPod = "db-0"

// pgServer waits until the application's pod on cluster is Running with an IP and its server
// answers, and returns it. A server that started since since and logged a PANIC there (one that
// cannot recover its copy, which every restart logs again) fails it at once, with that line.
func (r *Run) pgServer(ctx context.Context, cluster string, since time.Time) (pgsql.Server, error) {
	var server pgsql.Server
	var panicked string
	err := r.poll(ctx, pollInterval, func(ctx context.Context) (err error) {
		if server, err = r.pgServerNow(ctx, cluster); err != nil {
			if panicked = r.pgPanic(cluster, since); panicked != "" {
				return nil
			}
		}
		return err
	})
	switch {
	case err != nil:
		return server, fmt.Errorf("PostgreSQL does not answer on %s: %w", cluster, err)
	case panicked != "":
		return server, fmt.Errorf("PostgreSQL does not start on %s: %s", cluster, panicked)
	}
	return server, nil
}

// pgServerNow returns the application's server on cluster when its pod is Running with an IP
// and the server answers.
func (r *Run) pgServerNow(ctx context.Context, cluster string) (pgsql.Server, error) {
	pg, err := pgsql.Find()
	if err != nil {
		return pgsql.Server{}, err
	}
	pod := &corev1.Pod{}
	if err := r.env.Clusters[cluster].Get(ctx, client.ObjectKey{Namespace: r.c.Namespace, Name: pgPod}, pod); err != nil {
		return pgsql.Server{}, fmt.Errorf("PostgreSQL's pod on %s: %w", cluster, err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() {
		return pgsql.Server{}, fmt.Errorf("PostgreSQL's pod on %s is %s", cluster, pod.Status.Phase)
	}
	server := pgsql.Server{Install: pg, Host: pod.Status.PodIP}
	return server, server.Ready(ctx)
}

// pgWritingNow checks that PostgreSQL answers on cluster and that pgbench committed there in the
// current period, and returns the pod and its volumes as writingNow does.
func (r *Run) pgWritingNow(ctx context.Context, cluster string) ([]writer, map[string]string, error) {
	ws, err := r.writers(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	if len(ws) != 1 {
		return nil, nil, fmt.Errorf("%d of 1 pods Running", len(ws))
	}
	handles, err := r.volumes(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	server, err := r.pgServerNow(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	rows, err := server.HistoryByRun(ctx)
	if err != nil {
		return nil, nil, err
	}
	since, n := r.pgSince(), int64(0)
	for run, count := range rows {
		if (pgsql.RunLog{ID: run}).Started().After(since) {
			n += count
		}
	}
	if n < 5 {
		return nil, nil, fmt.Errorf("pgbench has not committed 5 transactions on %s yet", cluster)
	}
	return ws, handles, nil
}

func (r *Run) pgSince() time.Time {
	if r.pg.since.IsZero() {
		return r.t0
	}
	return r.pg.since
}

// pgCheckFailover judges a failover's target: nothing committed before the last group sync
// lost (a second earlier, for the truncation of metav1.Time).
func (r *Run) pgCheckFailover(ctx context.Context, step *Step, lastSync time.Time) error {
	return r.pgJudge(ctx, step, lastSync.Add(-time.Second))
}

// pgJudge judges the database on step.To after the step moved the application from step.From
// (see the top of this file); by is the recovery point of a failover, zero for a relocation. It
// adds the transactions kept and lost to step and starts the target's period.
func (r *Run) pgJudge(ctx context.Context, step *Step, by time.Time) error {
	began := time.Now().Add(-step.Duration)
	server, err := r.pgServer(ctx, step.To, began)
	if err != nil {
		return err
	}
	j := PostgresJudgement{Action: step.Action, From: step.From, To: step.To}
	j.Recovery = r.pgRecovery(step.To)
	if j.Sums, err = server.Sums(ctx); err != nil {
		return err
	}
	if !j.Sums.Holds() {
		return fmt.Errorf("pgbench's invariant is broken on %s: %s", step.To, j.Sums)
	}
	if err := server.Amcheck(ctx); err != nil {
		return fmt.Errorf("pg_amcheck found corruption on %s: %w", step.To, err)
	}
	runs, err := pgsql.ReadRuns(PgbenchLogDir(r.env.DataDir(step.From), r.c.Namespace, pgPod))
	if err != nil {
		return err
	}
	rows, err := server.HistoryByRun(ctx)
	if err != nil {
		return err
	}
	errs := r.pgCompare(&j, runs, rows, by, began)
	step.Kept, step.Lost = uint64(j.Present), uint64(j.Lost) //nolint:gosec // counts
	r.pg.judgements = append(r.pg.judgements, j)
	r.pg.since = began
	r.say("  postgres on %s: %s; invariant holds (%d); pg_amcheck clean; %d runs of pgbench on %s committed %d transactions, %d of them to keep; %d on %s, %d lost",
		step.To, j.Recovery, j.Sums.History, j.Runs, step.From, j.Committed, j.MustKeep, j.Present, step.To, j.Lost)
	return errors.Join(errs...)
}

// pgCompare compares the target's rows by run with what the source's runs logged and with the
// runs judged before, filling j and r.pg.kept.
func (r *Run) pgCompare(j *PostgresJudgement, runs map[string]*pgsql.RunLog, rows map[string]int64, by, began time.Time) []error {
	var errs []error
	if r.pg.kept == nil {
		r.pg.kept = map[string]int64{}
	}
	for id, want := range r.pg.kept {
		if rows[id] != want {
			errs = append(errs, fmt.Errorf("run %s of pgbench held %d rows before, %s holds %d", id, want, j.To, rows[id]))
		}
	}
	since, period := r.pgSince(), map[string]bool{}
	for id, run := range runs {
		if _, judged := r.pg.kept[id]; judged || run.Started().Before(since) {
			continue
		}
		period[id] = true
		committed, present := int64(len(run.Committed)), rows[id]
		mustKeep := committed
		if !by.IsZero() {
			mustKeep = run.CommittedBy(by)
		}
		if present < mustKeep {
			errs = append(errs, fmt.Errorf("run %s of pgbench on %s committed %d transactions before %s, %s holds %d of them",
				id, j.From, mustKeep, by.Format(time.TimeOnly), j.To, present))
		}
		j.Runs++
		j.Committed += committed
		j.MustKeep += mustKeep
		j.Present += present
		j.Lost += max(0, committed-present)
	}
	for id, count := range rows {
		_, judged := r.pg.kept[id]
		own := (pgsql.RunLog{ID: id}).Started().After(began)
		if !judged && !period[id] && !own {
			errs = append(errs, fmt.Errorf("%s holds %d rows of pgbench run %q, which neither %s's period nor %s itself ran", j.To, count, id, j.From, j.To))
		}
	}
	for id := range period {
		r.pg.kept[id] = rows[id]
	}
	return errs
}

// pgRecovery reads how the target's server last started, from its container's log: "crash
// recovery" when it recovered an unclean copy, "clean start" after a shutdown, with the line
// that says so; "" when there is no log to read.
func (r *Run) pgRecovery(cluster string) string {
	log, _, ok := r.pgLastStart(cluster)
	if !ok {
		return ""
	}
	for _, l := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(l, "automatic recovery in progress"):
			return "crash recovery"
		case strings.Contains(l, "database system was shut down at"):
			return "clean start"
		}
	}
	return "start not logged"
}

// pgPanic is the first PANIC line of the last start of the Postgres pod's server on cluster
// when that start was at since or later; "" when it logged none, or there is no log to read.
func (r *Run) pgPanic(cluster string, since time.Time) string {
	section, started, ok := r.pgLastStart(cluster)
	if !ok || started.IsZero() || started.Before(since.Truncate(time.Second)) {
		return ""
	}
	for _, l := range strings.Split(section, "\n") {
		if strings.Contains(l, "PANIC:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// pgLastStart is the Postgres pod's server log on cluster from its container's last start (the
// lab kubelet's "==== <time> ..." line before each) and that start's time; the whole log and a
// zero time when no start line is found; false when there is no log to read.
func (r *Run) pgLastStart(cluster string) (string, time.Time, bool) {
	log, ok := r.pgLog(cluster)
	if !ok {
		return "", time.Time{}, false
	}
	i := strings.LastIndex(log, "\n==== ")
	if i < 0 {
		return log, time.Time{}, true
	}
	section := log[i+len("\n==== "):]
	header, _, _ := strings.Cut(section, " ")
	started, err := time.Parse(time.RFC3339, header)
	if err != nil {
		started = time.Time{}
	}
	return section, started, true
}

// pgLog is the Postgres pod's server log on cluster, every start of its container.
func (r *Run) pgLog(cluster string) (string, bool) {
	if r.env.LogDir == nil {
		return "", false
	}
	raw, err := os.ReadFile(kubelet.LogPath(r.env.LogDir(cluster), r.c.Namespace, pgPod, "postgres"))
	if err != nil {
		return "", false
	}
	return string(raw), true
}
