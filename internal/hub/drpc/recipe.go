package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hookexpr"
)

// droverServiceAccounts are the ServiceAccounts drover's own processes run as: a hook Job may
// not run as one of them, whatever namespace it names (docs/decisions/0011-application-hooks.md,
// Tenancy).
var droverServiceAccounts = []string{"drover-agent", "drover-hub"}

// observeRecipe reads and checks the DRRecipe the DRPlacementControl names (spec.recipeRef) and
// decides what the groups are handed of it (sc.recipe, sc.decisions). It runs after observe,
// because an action in progress keeps the copy its groups already carry.
//
// While an action is in progress and a group carries the copy taken for it, that copy is kept
// and the DRRecipe is not read again: it was checked when it was taken, and neither an edit nor
// the deletion of the DRRecipe may change, or stop, a failover halfway.
//
// Otherwise a recipe that is missing or that the hub refuses sets Validated False (NotFound,
// InvalidSpec) and sc.invalid, so that nothing is done and nothing is copied, as for any other
// spec the hub cannot act on. A missing recipe is not passed over with the application
// protected without its hooks: the team named it because the application needs it (a clean
// shutdown before a relocation, a restore order), and an action run without it could leave the
// application as the recipe was written to prevent. The groups already written keep their
// spec, so replication goes on while Validated says what to fix; the mistake shows while the
// application is settled, before a failover needs it.
func (r *Reconciler) observeRecipe(ctx context.Context, sc *scope) error {
	sc.recipeObserved = true
	if frozen := sc.frozenRecipe(); frozen != nil {
		sc.recipe = frozen
		sc.observeHookDecision()
		return nil
	}
	ref := sc.drpc.Spec.RecipeRef
	if ref == nil {
		return nil
	}
	recipe := &v1alpha1.DRRecipe{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: sc.drpc.Namespace, Name: ref.Name}, recipe)
	switch {
	case apierrors.IsNotFound(err):
		return sc.invalidate(v1alpha1.ReasonNotFound, fmt.Sprintf("spec.recipeRef names DRRecipe %s, which does not exist in namespace %s: "+
			"create it there, or remove spec.recipeRef; no hook runs and the groups keep their last recipe until then", ref.Name, sc.drpc.Namespace))
	case err != nil:
		return fmt.Errorf("failed to get DRRecipe %s/%s: %w", sc.drpc.Namespace, ref.Name, err)
	}
	spec := recipe.Spec.DeepCopy()
	if msg := recipeProblem(sc.drpc, spec); msg != "" {
		return sc.invalidate(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("DRRecipe %s: %s", recipe.Name, msg))
	}
	sc.recipe = &v1alpha1.VRGRecipe{Name: recipe.Name, Spec: *spec}
	sc.observeHookDecision()
	return nil
}

// actionKey identifies the action in force for the recipe's copy and the hooks' runs: the
// DRPlacementControl's actionStartTime in RFC 3339; empty when no action ran.
func actionKey(st *v1alpha1.DRPlacementControlStatus) string {
	if st.ActionStartTime == nil {
		return ""
	}
	return st.ActionStartTime.UTC().Format(time.RFC3339)
}

// frozenRecipe is the copy a group carries for the action in progress, without its decisions;
// nil when no action is in progress or no group carries its copy yet.
func (sc *scope) frozenRecipe() *v1alpha1.VRGRecipe {
	st := &sc.drpc.Status
	if !inActionPhase(st.Phase) {
		return nil
	}
	key := actionKey(st)
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		if !cv.reachable() || cv.vrg == nil || cv.vrg.Spec.Recipe == nil || cv.vrg.Spec.Recipe.Action != key {
			continue
		}
		frozen := cv.vrg.Spec.Recipe.DeepCopy()
		frozen.Decisions = nil
		return frozen
	}
	return nil
}

// recipeFor is the recipe the group on cv is handed: the copy observeRecipe decided, stamped
// with the action in force, with the person's decision when it answers a hook that failed
// there. A reconcile that did not observe the recipe (the delete path) keeps what the group
// carries.
func (sc *scope) recipeFor(cv *clusterView) *v1alpha1.VRGRecipe {
	if !sc.recipeObserved {
		if cv.vrg == nil {
			return nil
		}
		return cv.vrg.Spec.Recipe.DeepCopy()
	}
	if sc.recipe == nil {
		return nil
	}
	out := sc.recipe.DeepCopy()
	out.Action = actionKey(&sc.drpc.Status)
	if d := sc.drpc.Spec.HookDecision; d != nil && sc.decisionTo[cv.name] && sc.decisionKey == out.Action {
		out.Decisions = []v1alpha1.HookDecision{*d}
	}
	return out
}

// recipeProblem fills in every namespace the recipe leaves empty (the DRRecipe's, that is the
// DRPlacementControl's) and says what the hub refuses in it, naming the hook or group and what
// to fix; empty when nothing. The API server checked the rest when the DRRecipe was written.
func recipeProblem(drpc *v1alpha1.DRPlacementControl, spec *v1alpha1.DRRecipeSpec) string {
	allowed := protectedNamespaces(drpc)
	placement := drpc.Spec.PlacementRef != nil
	fill := func(ns *string, what string) string {
		if *ns == "" {
			*ns = drpc.Namespace
		}
		if slices.Contains(allowed, *ns) {
			return ""
		}
		mode := "spec.protectedNamespaces"
		if placement {
			mode = "its own namespace in placement mode"
		}
		return fmt.Sprintf("%s names namespace %s, which DRPlacementControl %s does not protect (%s: %s): name one of those namespaces, or leave it empty for %s",
			what, *ns, drpc.Name, mode, strings.Join(allowed, ", "), drpc.Namespace)
	}
	if placement && len(spec.Groups) > 0 {
		return fmt.Sprintf("spec.groups (group %s) set a restore order, but in placement mode a GitOps tool creates the application's objects and drover cannot order them: "+
			"remove spec.groups, or protect the application in self-contained mode (spec.protectedNamespaces)", spec.Groups[0].Name)
	}
	for i := range spec.Groups {
		g := &spec.Groups[i]
		for j := range g.Resources {
			if msg := fill(&g.Resources[j].Namespace, fmt.Sprintf("group %s (%s)", g.Name, g.Resources[j].Kind)); msg != "" {
				return msg
			}
		}
	}
	for i := range spec.Hooks {
		if msg := hookProblem(&spec.Hooks[i], fill); msg != "" {
			return msg
		}
	}
	return ""
}

// hookProblem checks one hook and fills in its namespace (fill).
func hookProblem(h *v1alpha1.Hook, fill func(ns *string, what string) string) string {
	what := fmt.Sprintf("hook %s", h.Name)
	switch {
	case h.Exec != nil:
		return fill(&h.Exec.Namespace, what)
	case h.Scale != nil:
		return fill(&h.Scale.Namespace, what)
	case h.Check != nil:
		if msg := fill(&h.Check.Object.Namespace, what); msg != "" {
			return msg
		}
		if h.Check.Expression != "" {
			if _, err := hookexpr.Compile(h.Check.Expression); err != nil {
				return fmt.Sprintf("%s: check.expression does not compile: %v; write a CEL expression over the object bound to self that returns a bool, such as self.status.readyReplicas == self.spec.replicas",
					what, err)
			}
		}
	case h.Job != nil:
		if msg := fill(&h.Job.Namespace, what); msg != "" {
			return msg
		}
		return jobProblem(what, h.Job)
	}
	return ""
}

// jobProblem says what the hub refuses in a Job hook's template: none, no container, or one of
// drover's own ServiceAccounts (the agent creates the Job, and a template that ran as the agent
// would hold the agent's rights in the tenant's namespace).
func jobProblem(what string, job *v1alpha1.JobHook) string {
	t := job.Template
	if t == nil || len(t.Template.Spec.Containers) == 0 {
		return fmt.Sprintf("%s: job.template has no container: give it template.spec.containers, as a Job's spec has", what)
	}
	for _, sa := range []string{t.Template.Spec.ServiceAccountName, t.Template.Spec.DeprecatedServiceAccount} {
		if slices.Contains(droverServiceAccounts, sa) {
			return fmt.Sprintf("%s: job.template runs as ServiceAccount %s, which is drover's own: name a ServiceAccount of namespace %s, or none for its default",
				what, sa, job.Namespace)
		}
	}
	return ""
}
