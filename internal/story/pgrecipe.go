package story

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/tenancy"
)

// The Postgres workload's recipe (Case.Hooks): docs/examples/recipe-postgres.yaml made to run
// in the lab, where PostgreSQL's programs are the machine's (pgsql.Install) and pgbench is a
// sidecar of the database's pod, not a Deployment of its own to drain:
//
//   - checkpoint (BeforeSync): psql CHECKPOINT in the database's pod, before each copy drover
//     chooses the instant of (the relocation's final sync);
//   - stop-db (BeforeStop, group db): pg_ctl stop -m fast, so that the database shuts down
//     cleanly before its StatefulSet is stopped and the final sync taken;
//   - migrate (AfterReady, group db): a Job that applies the application's schema migration
//     (idempotent: a table app_migrations holding version 1) once the database is Ready;
//   - check (AfterReady, group db): the drill's check Job (PostgresCheck): PostgreSQL answers
//     and pgbench's invariant holds.

// PostgresRecipeName is the name of the Postgres workload's DRRecipe.
const PostgresRecipeName = "postgres"

// postgresMigration applies the application's one migration once PostgreSQL answers: a table
// app_migrations with version 1 in it, created and inserted only when missing.
const postgresMigration = `set -eu
tries=0
until pg_isready -q -t 5; do
  tries=$((tries + 1)); [ "$tries" -lt 60 ] || { echo "PostgreSQL at $PGHOST does not answer"; exit 1; }
  sleep 1
done
psql -XAtq -v ON_ERROR_STOP=1 \
  -c 'CREATE TABLE IF NOT EXISTS app_migrations (version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())' \
  -c 'INSERT INTO app_migrations (version) VALUES (1) ON CONFLICT DO NOTHING'
echo "migration 1 applied"`

// PostgresRecipe is the Postgres workload's recipe in namespace, its Jobs running PostgreSQL's
// programs from binDir (pgsql.Install.BinDir).
func PostgresRecipe(namespace, binDir string) *v1alpha1.DRRecipe {
	db := metav1.LabelSelector{MatchLabels: appLabels()}
	minute := func(n int) *metav1.Duration { return &metav1.Duration{Duration: time.Duration(n) * time.Minute} }
	check := PostgresCheck(binDir).Spec
	return &v1alpha1.DRRecipe{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRRecipe"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: PostgresRecipeName},
		Spec: v1alpha1.DRRecipeSpec{
			Groups: []v1alpha1.RecoveryGroup{{Name: "db", ReadyTimeout: minute(5),
				Resources: []v1alpha1.RecipeResources{{Kind: "StatefulSet", Names: []string{"db"}}}}},
			Hooks: []v1alpha1.Hook{
				{Name: "checkpoint", Point: v1alpha1.HookBeforeSync, Timeout: minute(1), Exec: &v1alpha1.ExecHook{
					PodSelector: db, Pods: v1alpha1.ExecOnePod, Container: "postgres", Command: []string{"psql", "-X", "-c", "CHECKPOINT"}}},
				{Name: "stop-db", Point: v1alpha1.HookBeforeStop, Group: "db", Timeout: minute(2), Exec: &v1alpha1.ExecHook{
					PodSelector: db, Container: "postgres", Command: []string{"sh", "-c", `pg_ctl stop -m fast -W -D "$PGDATA"`}}},
				{Name: "migrate", Point: v1alpha1.HookAfterReady, Group: "db", Timeout: minute(5),
					Job: &v1alpha1.JobHook{Template: postgresMigrationJob(check)}},
				{Name: "check", Point: v1alpha1.HookAfterReady, Group: "db", Timeout: minute(5),
					Job: &v1alpha1.JobHook{Template: &check}},
			},
		},
	}
}

// postgresMigrationJob is the migration's Job: the check's pod (its user, its programs, its
// address of the database), writing, running postgresMigration.
func postgresMigrationJob(check batchv1.JobSpec) *batchv1.JobSpec {
	job := check.DeepCopy()
	c := &job.Template.Spec.Containers[0]
	c.Name, c.Command = "migrate", []string{"sh", "-c", postgresMigration}
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PGOPTIONS" || e.Name == "CHECK_WAIT_SECONDS" })
	job.BackoffLimit = ptr.To[int32](0)
	return job
}

// postgresHooks are the recipe's hooks an action runs, by the cluster they run on: the source's
// (a relocation's) and the target's.
func postgresHooks(action string) (source, target []string) {
	if action == "relocate" {
		return []string{"checkpoint", "stop-db"}, []string{"migrate", "check"}
	}
	return nil, []string{"migrate", "check"}
}

// checkHooks waits until the DRPlacementControl reports every hook the step's action runs as
// Succeeded on its cluster (Case.Hooks), and notes them in the step's check.
func (r *Run) checkHooks(ctx context.Context, step *Step) error {
	if !r.c.Hooks {
		return nil
	}
	source, target := postgresHooks(step.Action)
	var missing []string
	err := r.await(ctx, step.Action+": hooks", func(d *v1alpha1.DRPlacementControl) bool {
		missing = nil
		for cluster, names := range map[string][]string{step.From: source, step.To: target} {
			for _, name := range names {
				if res := hookResult(d.Status.Hooks, cluster, name); res != v1alpha1.HookSucceeded {
					missing = append(missing, fmt.Sprintf("%s on %s: %s", name, cluster, res))
				}
			}
		}
		return len(missing) == 0
	})
	if err != nil {
		slices.Sort(missing)
		return errors.Join(err, fmt.Errorf("hooks not Succeeded: %s", strings.Join(missing, "; ")))
	}
	note := "hooks " + strings.Join(target, ", ") + " on " + step.To
	if len(source) > 0 {
		note = "hooks " + strings.Join(source, ", ") + " on " + step.From + "; " + strings.Join(target, ", ") + " on " + step.To
		// The kubelet stops a pod with SIGTERM, PostgreSQL's smart shutdown: a fast one is the
		// stop-db hook's.
		n := r.pgFastShutdowns(step.From)
		if n < 0 || r.pg.fastShutdowns < 0 {
			return fmt.Errorf("no log of PostgreSQL on %s to read: stop-db's fast shutdown cannot be checked", step.From)
		}
		if n <= r.pg.fastShutdowns {
			return fmt.Errorf("PostgreSQL on %s logged no fast shutdown request since the relocation began (%d before, %d now): stop-db did not stop it", step.From, r.pg.fastShutdowns, n)
		}
		note += "; stop-db's fast shutdown logged on " + step.From
	}
	step.Check = strings.TrimPrefix(step.Check+"; "+note, "; ")
	r.say("  %s: Succeeded", note)
	return nil
}

// hookResult is the result of hook name's latest run on cluster, "not run" when there is none.
func hookResult(runs []v1alpha1.HookRun, cluster, name string) v1alpha1.HookResult {
	for _, h := range runs {
		if h.Cluster == cluster && h.Name == name {
			return h.Result
		}
	}
	return "not run"
}

// createRecipe creates the workload's recipe on the hub beside its DRPlacementControl
// (Case.Hooks; only the Postgres workload has one).
func (r *Run) createRecipe(ctx context.Context) error {
	if !r.c.Hooks {
		return nil
	}
	if !r.c.Workload.isPostgres() || r.c.Mode != SelfContained {
		return fmt.Errorf("case %s: only the Postgres workload has a recipe, in self-contained mode (its restore order)", r.c.Name())
	}
	pg, err := pgsql.Find()
	if err != nil {
		return err
	}
	r.say("deploy: DRRecipe %s/%s: checkpoint before a sync, stop-db before a relocation stops it, migrate and check once Ready", r.c.Namespace, PostgresRecipeName)
	if err := r.env.Hub.Create(ctx, PostgresRecipe(r.c.Namespace, pg.BinDir)); err != nil {
		return fmt.Errorf("failed to create the DRRecipe: %w", err)
	}
	// Hooks run only in a namespace whose administrator allows them on each managed cluster.
	for name, cl := range r.env.Clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.c.Namespace, Labels: map[string]string{tenancy.LabelHooks: tenancy.HooksEnabled}}}
		if err := cl.Create(ctx, ns); err != nil {
			return fmt.Errorf("failed to create namespace %s on %s, allowing drover's hooks: %w", r.c.Namespace, name, err)
		}
	}
	return nil
}

// pgFastShutdowns counts the fast shutdown requests the Postgres pod's server logged on
// cluster, in every start its container log holds; -1 without a log to read.
func (r *Run) pgFastShutdowns(cluster string) int {
	log, ok := r.pgLog(cluster)
	if !ok {
		return -1
	}
	return strings.Count(log, "received fast shutdown request")
}
