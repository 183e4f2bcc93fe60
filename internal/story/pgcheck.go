package story

import (
	"fmt"
	"regexp"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/lab/pgsql"
)

// The check of a drill of the Postgres workload: a Job that asks the copy of the database
// started in the sandbox whether it answers (pg_isready) and whether pgbench's invariant holds
// (sum(pgbench_accounts.abalance) = sum(pgbench_tellers.tbalance) =
// sum(pgbench_branches.bbalance) = sum(pgbench_history.delta)), and exits non-zero, with a
// message that names the check that failed and its figures, when either does not. It reaches
// the StatefulSet's pod by its name under the headless Service (db-0.db), which the sandbox
// keeps, as a client in the namespace would. docs/examples/drill-check-postgres.yaml is this
// Job for Debian's PostgreSQL.

// PostgresCheckUser is the user the check runs as: not root, as the restricted Pod Security
// level asks; the PostgreSQL image's postgres user. The client needs no account of the
// machine's.
const PostgresCheckUser int64 = 999

// postgresCheckScript is the check's script. It retries pg_isready once a second for
// CHECK_WAIT_SECONDS (the pod may start before the database's name resolves), then reads the
// four sums and the history's rows in one statement, so in one snapshot, read-only. Its verdict,
// PASSED or FAILED with the figures, is its last line and its termination message, which the
// drill's report shows (CHECK_MESSAGE_FILE names another file for a run outside a pod).
const postgresCheckScript = `set -u
msg=${CHECK_MESSAGE_FILE:-/dev/termination-log}
verdict() { echo "$2"; echo "$2" > "$msg"; exit "$1"; }
tries=0
until answer=$(pg_isready -t 5 2>&1); do
  tries=$((tries + 1))
  [ "$tries" -lt "${CHECK_WAIT_SECONDS:-60}" ] ||
    verdict 1 "FAILED pg_isready: PostgreSQL at $PGHOST:${PGPORT:-5432} does not answer after $tries tries: $answer"
  sleep 1
done
if ! sums=$(psql -XAtq -v ON_ERROR_STOP=1 -F ' ' -c "SELECT
  (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts), (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers),
  (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history),
  (SELECT count(*) FROM pgbench_history)" 2>&1); then
  verdict 1 "FAILED invariant query: PostgreSQL at $PGHOST answers but the query failed: $sums"
fi
set -- $sums
[ $# -eq 5 ] || verdict 1 "FAILED invariant query: it returned '$sums', not five numbers"
[ "$1" = "$2" ] && [ "$2" = "$3" ] && [ "$3" = "$4" ] ||
  verdict 1 "FAILED pgbench's invariant is broken: sum(pgbench_accounts.abalance) = $1, sum(pgbench_tellers.tbalance) = $2, sum(pgbench_branches.bbalance) = $3, sum(pgbench_history.delta) = $4 ($5 history rows)"
verdict 0 "PASSED PostgreSQL at $PGHOST answers and pgbench's invariant holds: every sum is $1 over $5 transactions in pgbench_history"
`

// PostgresCheck is the check Job of a drill of the Postgres workload, its programs from
// binDir (pgsql.Install.BinDir): one pod on the lab kubelet's node, image pgsql.ImageShell,
// meeting the restricted Pod Security level, run once (a broken invariant stays broken) within
// five minutes. The agent creates it in the sandbox namespace.
func PostgresCheck(binDir string) *batchv1.Job {
	spec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(PostgresCheckUser), RunAsGroup: ptr.To(PostgresCheckUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: "check", Image: pgsql.ImageShell, Command: []string{"sh", "-c", postgresCheckScript},
			Env: []corev1.EnvVar{
				{Name: "PATH", Value: pgsql.Install{BinDir: binDir}.PATH()},
				{Name: "PGHOST", Value: pgPod + ".db"}, {Name: "PGUSER", Value: pgsql.User}, {Name: "PGDATABASE", Value: "postgres"},
				{Name: "PGCONNECT_TIMEOUT", Value: "5"}, {Name: "PGOPTIONS", Value: "-c default_transaction_read_only=on"},
				{Name: "CHECK_WAIT_SECONDS", Value: "60"},
			},
			SecurityContext: restrictedContainer(),
		}},
	}
	onLabKubelet(&spec)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "check-postgres"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0), ActiveDeadlineSeconds: ptr.To[int64](300),
			Template: corev1.PodTemplateSpec{Spec: spec},
		},
	}
}

// checkPassed matches the check's verdict when it passed; its group is the transactions counted.
var checkPassed = regexp.MustCompile(`PASSED .* over (\d+) transactions in pgbench_history`)

// postgresCheckTransactions reads how many transactions the check counted in the sandbox's copy
// from its verdict (the log tail the drill recorded).
func postgresCheckTransactions(tail string) (uint64, error) {
	m := checkPassed.FindStringSubmatch(tail)
	if m == nil {
		return 0, fmt.Errorf("the check's log tail holds no verdict PASSED: %q", tail)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to read the check's count %q: %w", m[1], err)
	}
	return n, nil
}
