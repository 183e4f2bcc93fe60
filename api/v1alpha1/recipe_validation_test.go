package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The messages the API server returns for the DRRecipe's CEL rules.
const (
	msgOneKind          = "each hook must set exactly one of exec, job, scale or check"
	msgNoExecAtRestore  = "an exec hook cannot run at AfterRestore"
	msgNoScaleAtSync    = "a scale hook cannot run at BeforeSync"
	msgGroupPoint       = "group applies to BeforeStop and AfterReady hooks only"
	msgGroupUnknown     = "a hook's group must name one of spec.groups"
	msgHookTimeout      = "timeout must be from 1s to 1h"
	msgReadyTimeout     = "readyTimeout must be from 10s to 24h"
	msgEmptyPodSelector = "podSelector must not be empty"
	msgOneCheck         = "a check must set exactly one of condition"
	msgNoSecretCheck    = "a check may not read a Secret"
	msgNamesOrSelector  = "set at most one of names or selector"
	msgEmptyRecipe      = "a recipe must declare groups (the restore order), hooks, or both"
)

// pgRecipe is the PostgreSQL example of docs/hooks.md, docs/examples/recipe-postgres.yaml: a
// database StatefulSet, then a web Deployment; a CHECKPOINT before each sync, the pgbench clients
// scaled down and the database stopped cleanly before a relocation, the restored claim checked
// before anything starts, a migration Job once the database is Ready and before the web tier
// starts, and pg_isready with the invariant query once everything is Ready.
func pgRecipe(mutate ...func(*v1alpha1.DRRecipeSpec)) *v1alpha1.DRRecipe {
	raw, err := os.ReadFile(recipeExample)
	if err != nil {
		panic(err)
	}
	r := &v1alpha1.DRRecipe{}
	if err := yaml.UnmarshalStrict(raw, r); err != nil {
		panic(fmt.Sprintf("%s: %v", recipeExample, err))
	}
	r.Name, r.GenerateName, r.Namespace = "", "postgres-", testNamespace
	for _, m := range mutate {
		m(&r.Spec)
	}
	return r
}

// recipeExample is the recipe docs/hooks.md shows.
var recipeExample = filepath.Join("..", "..", "docs", "examples", "recipe-postgres.yaml")

func TestTheHooksGuideShowsTheExampleRecipe(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(recipeExample)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), "```yaml\n"+string(example)+"```") {
		t.Errorf("docs/hooks.md does not show %s as it is: paste the file into its first yaml block", recipeExample)
	}
}

// migrationJob is the example's migration Job.
func migrationJob() *batchv1.JobSpec {
	return &batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "migrate", Image: "example.com/app-migrate:1.4", Args: []string{"up"}}},
		}},
	}
}

// hook changes the recipe's hook named name.
func hook(name string, change func(*v1alpha1.Hook)) func(*v1alpha1.DRRecipeSpec) {
	return func(s *v1alpha1.DRRecipeSpec) {
		for i := range s.Hooks {
			if s.Hooks[i].Name == name {
				change(&s.Hooks[i])
				return
			}
		}
		panic("no hook " + name)
	}
}

func hookTimeout(name string, d time.Duration) func(*v1alpha1.DRRecipeSpec) {
	return hook(name, func(h *v1alpha1.Hook) { h.Timeout = &metav1.Duration{Duration: d} })
}

func TestDRRecipeAcceptsThePostgreSQLExample(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "the PostgreSQL recipe with its groups and hooks is accepted", obj: pgRecipe()},
		{name: "a recipe of hooks alone is accepted", obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) {
			s.Groups = nil
			s.Hooks = s.Hooks[:2]
		})},
		{name: "a recipe of groups alone is accepted", obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Hooks = nil })},
		{name: "a hook timeout of 1h is accepted", obj: pgRecipe(hookTimeout("checkpoint", time.Hour))},
		{name: "a hook timeout of 1s is accepted", obj: pgRecipe(hookTimeout("checkpoint", time.Second))},
		{name: "a check of a condition is accepted", obj: pgRecipe(hook("db-ready", func(h *v1alpha1.Hook) {
			h.Check.Expression = ""
			h.Check.Condition = &v1alpha1.CheckCondition{Type: "Ready"}
		}))},
	})
}

func TestDRRecipeRefusesHooksThatCannotWork(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "a hook with both an exec and a job is rejected", wantErr: msgOneKind,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Job = &v1alpha1.JobHook{Template: migrationJob()} }))},
		{name: "a hook with no kind is rejected", wantErr: msgOneKind,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Exec = nil }))},
		{name: "an exec at AfterRestore is rejected: no pod runs yet", wantErr: msgNoExecAtRestore,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Point = v1alpha1.HookAfterRestore }))},
		{name: "a scale at BeforeSync is rejected: it would stop the application every interval", wantErr: msgNoScaleAtSync,
			obj: pgRecipe(hook("drain-clients", func(h *v1alpha1.Hook) { h.Point = v1alpha1.HookBeforeSync }))},
		{name: "a group on a BeforeSync hook is rejected", wantErr: msgGroupPoint,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Group = "db" }))},
		{name: "a group on an AfterRestore hook is rejected", wantErr: msgGroupPoint,
			obj: pgRecipe(hook("claim-bound", func(h *v1alpha1.Hook) { h.Group = "db" }))},
		{name: "a hook naming a group the recipe does not declare is rejected", wantErr: msgGroupUnknown,
			obj: pgRecipe(hook("migrate", func(h *v1alpha1.Hook) { h.Group = "cache" }))},
		{name: "a hook naming a group in a recipe without groups is rejected", wantErr: msgGroupUnknown,
			obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Groups = nil })},
		{name: "a hook timeout of 1h and a second is rejected", wantErr: msgHookTimeout,
			obj: pgRecipe(hookTimeout("checkpoint", time.Hour+time.Second))},
		{name: "a hook timeout under a second is rejected", wantErr: msgHookTimeout,
			obj: pgRecipe(hookTimeout("checkpoint", 500*time.Millisecond))},
		{name: "a zero hook timeout is rejected", wantErr: msgHookTimeout,
			obj: pgRecipe(hookTimeout("checkpoint", 0))},
		{name: "an unknown point is rejected", wantErr: `spec.hooks[0].point: Unsupported value: "AfterSync"`,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Point = "AfterSync" }))},
		{name: "an unknown onError is rejected", wantErr: `spec.hooks[0].onError: Unsupported value: "Ignore"`,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.OnError = "Ignore" }))},
		{name: "two hooks of one name are rejected", wantErr: `spec.hooks[1]: Duplicate value`,
			obj: pgRecipe(hook("drain-clients", func(h *v1alpha1.Hook) { h.Name = "checkpoint" }))},
		{name: "a hook name that is not a DNS label is rejected", wantErr: "spec.hooks[0].name: Invalid value",
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Name = "Check_Point" }))},
		{name: "33 hooks are rejected", wantErr: "spec.hooks: Too many: 33: must have at most 32 items",
			obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) {
				for i := len(s.Hooks); i < 33; i++ {
					h := s.Hooks[0]
					h.Name = fmt.Sprintf("checkpoint-%d", i)
					s.Hooks = append(s.Hooks, h)
				}
			})},
		{name: "an empty recipe is rejected", wantErr: msgEmptyRecipe,
			obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Groups, s.Hooks = nil, nil })},
	})
}

func TestDRRecipeRefusesBadHookBodies(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "an exec with an empty podSelector is rejected: it would run in every pod", wantErr: msgEmptyPodSelector,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Exec.PodSelector = metav1.LabelSelector{} }))},
		{name: "an exec with no command is rejected", wantErr: "spec.hooks[0].exec.command: Required value",
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Exec.Command = nil }))},
		{name: "an exec in pods Some is rejected", wantErr: `spec.hooks[0].exec.pods: Unsupported value: "Some"`,
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Exec.Pods = "Some" }))},
		{name: "an exec in a namespace that is not a DNS label is rejected", wantErr: "spec.hooks[0].exec.namespace: Invalid value",
			obj: pgRecipe(hook("checkpoint", func(h *v1alpha1.Hook) { h.Exec.Namespace = "Other_NS" }))},
		{name: "a job without a template is rejected", wantErr: "spec.hooks[4].job.template: Required value",
			obj: pgRecipe(hook("migrate", func(h *v1alpha1.Hook) { h.Job.Template = nil }))},
		{name: "a scale to -1 replicas is rejected", wantErr: "spec.hooks[1].scale.replicas: Invalid value: -1",
			obj: pgRecipe(hook("drain-clients", func(h *v1alpha1.Hook) { h.Scale.Replicas = ptr.To[int32](-1) }))},
		{name: "a scale of a DaemonSet is rejected", wantErr: `spec.hooks[1].scale.kind: Unsupported value: "DaemonSet"`,
			obj: pgRecipe(hook("drain-clients", func(h *v1alpha1.Hook) { h.Scale.Kind = "DaemonSet" }))},
		{name: "a scale without replicas is rejected", wantErr: "spec.hooks[1].scale.replicas: Required value",
			obj: pgRecipe(hook("drain-clients", func(h *v1alpha1.Hook) { h.Scale.Replicas = nil }))},
		{name: "a check with both a condition and an expression is rejected", wantErr: msgOneCheck,
			obj: pgRecipe(hook("db-ready", func(h *v1alpha1.Hook) { h.Check.Condition = &v1alpha1.CheckCondition{Type: "Ready"} }))},
		{name: "a check with neither a condition nor an expression is rejected", wantErr: msgOneCheck,
			obj: pgRecipe(hook("db-ready", func(h *v1alpha1.Hook) { h.Check.Expression = "" }))},
		{name: "a check of a Secret is rejected", wantErr: msgNoSecretCheck,
			obj: pgRecipe(hook("claim-bound", func(h *v1alpha1.Hook) { h.Check.Object.Kind = "Secret" }))},
		{name: "a check of a condition status Maybe is rejected", wantErr: `spec.hooks[5].check.condition.status: Unsupported value: "Maybe"`,
			obj: pgRecipe(hook("db-ready", func(h *v1alpha1.Hook) {
				h.Check.Expression = ""
				h.Check.Condition = &v1alpha1.CheckCondition{Type: "Ready", Status: "Maybe"}
			}))},
	})
}

func TestDRRecipeRefusesBadGroups(t *testing.T) {
	group := func(change func(*v1alpha1.RecoveryGroup)) func(*v1alpha1.DRRecipeSpec) {
		return func(s *v1alpha1.DRRecipeSpec) { change(&s.Groups[0]) }
	}
	runCreateCases(t, []createCase{
		{name: "a group picking by names and selector at once is rejected", wantErr: msgNamesOrSelector,
			obj: pgRecipe(group(func(g *v1alpha1.RecoveryGroup) {
				g.Resources[0].Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
			}))},
		{name: "a group of CronJobs is rejected: drover knows no readiness for them", wantErr: `spec.groups[0].resources[0].kind: Unsupported value: "CronJob"`,
			obj: pgRecipe(group(func(g *v1alpha1.RecoveryGroup) { g.Resources[0].Kind = "CronJob" }))},
		{name: "a group without resources is rejected", wantErr: "spec.groups[0].resources: Required value",
			obj: pgRecipe(group(func(g *v1alpha1.RecoveryGroup) { g.Resources = nil }))},
		{name: "a readyTimeout of 5s is rejected", wantErr: msgReadyTimeout,
			obj: pgRecipe(group(func(g *v1alpha1.RecoveryGroup) { g.ReadyTimeout = &metav1.Duration{Duration: 5 * time.Second} }))},
		{name: "a readyTimeout of 25h is rejected", wantErr: msgReadyTimeout,
			obj: pgRecipe(group(func(g *v1alpha1.RecoveryGroup) { g.ReadyTimeout = &metav1.Duration{Duration: 25 * time.Hour} }))},
		{name: "two groups of one name are rejected", wantErr: "spec.groups[1]: Duplicate value",
			obj: pgRecipe(func(s *v1alpha1.DRRecipeSpec) { s.Groups[1].Name = "db" })},
	})
}

func TestDRPlacementControlNamesARecipe(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "a DRPlacementControl naming a recipe is accepted", obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) {
			s.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
		})},
		{name: "a recipeRef without a name is rejected", wantErr: "spec.recipeRef.name: Required value",
			obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) { s.RecipeRef = &v1alpha1.RecipeReference{} })},
	})
}

func TestAHookDecisionNamesAFailedAttempt(t *testing.T) {
	decide := func(d v1alpha1.HookDecision) func(*v1alpha1.DRPlacementControlSpec) {
		return func(s *v1alpha1.DRPlacementControlSpec) { s.HookDecision = &d }
	}
	runCreateCases(t, []createCase{
		{name: "a retry of attempt 1 is accepted",
			obj: drpc(decide(v1alpha1.HookDecision{Hook: "stop-db", Attempt: 1, Decision: v1alpha1.HookRetry}))},
		{name: "a continue of attempt 3 is accepted",
			obj: drpc(decide(v1alpha1.HookDecision{Hook: "stop-db", Attempt: 3, Decision: v1alpha1.HookContinueAction}))},
		{name: "a decision other than Retry or Continue is rejected", wantErr: `spec.hookDecision.decision: Unsupported value: "Skip"`,
			obj: drpc(decide(v1alpha1.HookDecision{Hook: "stop-db", Attempt: 1, Decision: "Skip"}))},
		{name: "a decision without an attempt is rejected", wantErr: "spec.hookDecision.attempt: Required value",
			obj: drpc(decide(v1alpha1.HookDecision{Hook: "stop-db", Decision: v1alpha1.HookRetry}))},
	})
}

func TestAVolumeReplicationGroupCarriesTheRecipe(t *testing.T) {
	withRecipe := func(decisions ...v1alpha1.HookDecision) func(*v1alpha1.VolumeReplicationGroupSpec) {
		return func(s *v1alpha1.VolumeReplicationGroupSpec) {
			s.Recipe = &v1alpha1.VRGRecipe{Name: "postgres", Action: "2026-12-07T05:00:00Z", Spec: pgRecipe().Spec, Decisions: decisions}
		}
	}
	runCreateCases(t, []createCase{
		{name: "a group with the PostgreSQL recipe and a decision is accepted",
			obj: vrg(withRecipe(v1alpha1.HookDecision{Hook: "stop-db", Attempt: 1, Decision: v1alpha1.HookRetry}))},
		{name: "the recipe's own rules hold in the group", wantErr: msgNoScaleAtSync,
			obj: vrg(withRecipe(), func(s *v1alpha1.VolumeReplicationGroupSpec) {
				s.Recipe.Spec.Hooks[1].Point = v1alpha1.HookBeforeSync
			})},
		{name: "two decisions for one hook are rejected", wantErr: "Duplicate value",
			obj: vrg(withRecipe(v1alpha1.HookDecision{Hook: "stop-db", Attempt: 1, Decision: v1alpha1.HookRetry},
				v1alpha1.HookDecision{Hook: "stop-db", Attempt: 2, Decision: v1alpha1.HookRetry}))},
	})
}
