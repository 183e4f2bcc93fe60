package actions

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// pgRecipe is the PostgreSQL example of docs/hooks.md (docs/examples/recipe-postgres.yaml): a
// database group, then a web tier; a CHECKPOINT before each sync, the clients drained and the
// database stopped before a relocation, a check after the restore, a migration and checks after
// Ready.
func pgRecipe(t *testing.T, ns string) *v1alpha1.DRRecipe {
	t.Helper()
	file := filepath.Join("..", "..", "..", "docs", "examples", "recipe-postgres.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &v1alpha1.DRRecipe{}
	if err := yaml.UnmarshalStrict(raw, r); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	r.Namespace = ns
	return r
}

// recipeApp creates an application db naming pgRecipe, deployed on east.
func recipeApp(t *testing.T, e clitest.Env) *v1alpha1.DRPlacementControl {
	t.Helper()
	clitest.Create(t, pgRecipe(t, e.NS))
	db := e.NewApp(t, "db")
	cur := clitest.Get(t, db)
	cur.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	if err := clitest.Hub.Update(t.Context(), cur); err != nil {
		t.Fatalf("failed to name the recipe: %v", err)
	}
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West))
	return db
}

func TestPlanListsTheRecipesHooksAndGroupsInTheOrderTheActionRunsThem(t *testing.T) {
	e := clitest.NewEnv(t, "plan-hooks")
	recipeApp(t, e)
	var out bytes.Buffer
	if err := Plan(t.Context(), clitest.Hub, &out, PlanOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	east, west := "on "+e.East+": ", "on "+e.West+": "
	clitest.MustContain(t, out.String(),
		"Hooks and order of DRRecipe postgres, as the relocate runs them:",
		"  1. "+east+`BeforeSync hook checkpoint: exec "psql -U postgres -c CHECKPOINT" in one Ready pod of plan-hooks picked by app=db, container postgres (onError Fail, timeout 1m)`,
		"  2. "+east+"BeforeStop hook drain-clients: scale Deployment plan-hooks/pgbench to 0 (onError Fail, timeout 5m)",
		"  3. "+east+"stop the workloads no group picks",
		"  4. "+east+"stop group web (Deployments of plan-hooks picked by tier=web)",
		"  5. "+east+`BeforeStop hook stop-db: exec "pg_ctl stop -m fast -W -D /var/lib/postgresql/data" in every running pod`,
		"  6. "+east+"stop group db (StatefulSet plan-hooks/db)",
		"  7. "+east+"the final sync, once every hook above passed",
		"  8. "+west+"restore the objects that run no pods",
		"  9. "+west+"AfterRestore hook claim-bound: wait until PersistentVolumeClaim plan-hooks/data-db-0 holds self.status.phase == 'Bound'",
		"  10. "+west+"start group db (StatefulSet plan-hooks/db) and wait until it is Ready (within 5m)",
		"  11. "+west+"AfterReady hook migrate: run a Job in plan-hooks and wait until it completes",
		"  12. "+west+"AfterReady hook db-ready: wait until StatefulSet plan-hooks/db holds self.status.readyReplicas == self.spec.replicas",
		"  13. "+west+"start group web (Deployments of plan-hooks picked by tier=web) and wait until it is Ready (within 10m)",
		"  14. "+west+"start the workloads no group picks and wait until they are Ready",
		"  15. "+west+"AfterReady hook invariants",
		"(onError Continue, timeout 5m)",
		"  16. note: BeforeSync hooks run only ahead of a relocation's final sync: the volrep storage mirrors on its own schedule")
	t.Logf("drover plan relocate of the PostgreSQL example (docs/examples/recipe-postgres.yaml):\n%s", out.String())

	out.Reset()
	if err := Plan(t.Context(), clitest.Hub, &out, PlanOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"Hooks and order of DRRecipe postgres, as the failover runs them:",
		"  1. "+east+"no hook runs: a failover does not wait for the cluster it leaves",
		"  2. "+west+"restore the objects that run no pods")
	if strings.Contains(out.String(), "BeforeStop hook drain-clients") {
		t.Errorf("a failover's plan lists hooks of the cluster it leaves:\n%s", out.String())
	}
}

// TestThePlanSaysBeforeSyncHooksRunBeforeEveryVolSyncSync: the agent runs BeforeSync hooks
// before each VolSync sync, which it triggers itself every interval, and the plan of a VolSync
// application says so.
func TestThePlanSaysBeforeSyncHooksRunBeforeEveryVolSyncSync(t *testing.T) {
	spec := &pgRecipe(t, "shop").Spec
	policy := &v1alpha1.DRPolicy{Spec: v1alpha1.DRPolicySpec{SchedulingInterval: "5m",
		StorageClassBackends: []v1alpha1.StorageClassBackend{{Backend: v1alpha1.BackendVolSync}}}}
	got := strings.Join(syncNote(&cli.App{Policy: policy}, spec), "\n")
	want := "note: BeforeSync hooks also run before every VolSync sync while the application runs: the agent triggers each sync itself, every 5m, " +
		"once they passed; a hook failing with onError Fail skips that interval's sync, one with Continue syncs anyway"
	if got != want {
		t.Errorf("the plan's note for VolSync:\n got %q\nwant %q", got, want)
	}
	spec.Hooks = slices.DeleteFunc(spec.Hooks, func(h v1alpha1.Hook) bool { return h.Point == v1alpha1.HookBeforeSync })
	if n := syncNote(&cli.App{Policy: policy}, spec); n != nil {
		t.Errorf("a recipe without BeforeSync hooks gets a note: %q", n)
	}
}

func TestRetryAnswersTheFailedHookOfTheActionAndRefusesWithoutOne(t *testing.T) {
	e := clitest.NewEnv(t, "decide-hooks")
	db := recipeApp(t, e)
	var out bytes.Buffer
	err := Decide(t.Context(), clitest.Hub, &out, DecideOptions{Namespace: e.NS, App: "db", Decision: v1alpha1.HookRetry})
	if cli.ExitCodeOf(err) != cli.ExitRefused || !strings.Contains(err.Error(), "no hook has failed in decide-hooks/db's action in force") {
		t.Fatalf("a retry with no failed hook: want a refusal saying so, got %v", err)
	}
	if clitest.Get(t, db).Spec.HookDecision != nil {
		t.Fatal("a refused retry wrote a decision")
	}

	clitest.SetStatus(t, db, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase = v1alpha1.PhaseRelocating
		d.Status.Hooks = []v1alpha1.HookRun{
			{Cluster: e.East, Name: "drain-clients", Point: v1alpha1.HookBeforeStop, Attempt: 1, Result: v1alpha1.HookSucceeded},
			{Cluster: e.East, Name: "stop-db", Point: v1alpha1.HookBeforeStop, Attempt: 2, Result: v1alpha1.HookFailed, ExitCode: ptr.To[int32](1)},
		}
	})
	out.Reset()
	if err := Decide(t.Context(), clitest.Hub, &out, DecideOptions{Namespace: e.NS, App: "db", Decision: v1alpha1.HookContinueAction}); err != nil {
		t.Fatalf("continue failed: %v", err)
	}
	got := clitest.Get(t, db).Spec.HookDecision
	want := &v1alpha1.HookDecision{Hook: "stop-db", Attempt: 2, Decision: v1alpha1.HookContinueAction}
	if got == nil || *got != *want {
		t.Fatalf("spec.hookDecision = %+v, want %+v", got, want)
	}
	clitest.MustContain(t, out.String(), "Asked the hub to go on past it (recorded PassedOver; attempt 3 is not run): hook stop-db (BeforeStop) failed on decide-hooks-east at attempt 2")
}
