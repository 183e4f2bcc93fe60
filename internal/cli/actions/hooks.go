package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// DecideOptions are the options of `drover failover|relocate APP --retry` and `--continue`.
type DecideOptions struct {
	// Namespace and App name the DRPlacementControl.
	Namespace, App string
	// Decision is Retry or Continue.
	Decision v1alpha1.HookDecisionKind
}

// Validate checks the options that do not need the cluster.
func (o *DecideOptions) Validate() error {
	if o.App == "" {
		return cli.Usage(errors.New("name the application: the DRPlacementControl's name"))
	}
	if o.Decision != v1alpha1.HookRetry && o.Decision != v1alpha1.HookContinueAction {
		return cli.Usage(fmt.Errorf("unknown decision %q: use --retry or --continue", o.Decision))
	}
	return nil
}

// Decide answers the hook that failed in the application's action in force: it finds the
// Failed run in the DRPlacementControl's status.hooks and merge-patches spec.hookDecision with
// its hook, its attempt and the decision, so that the hub hands it to the cluster where that
// attempt failed, and to no later failure. It refuses, changing nothing, when no hook failed,
// or when several did (it cannot tell which one is meant).
func Decide(ctx context.Context, c client.Client, w io.Writer, o DecideOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	a, err := cli.LoadApp(ctx, c, o.Namespace, o.App)
	if err != nil {
		return err
	}
	d := a.DRPC
	key := d.Namespace + "/" + d.Name
	var failed []v1alpha1.HookRun
	for _, r := range d.Status.Hooks {
		if r.Result == v1alpha1.HookFailed {
			failed = append(failed, r)
		}
	}
	flag := "--" + strings.ToLower(string(o.Decision))
	switch len(failed) {
	case 0:
		return cli.Refused(fmt.Errorf("no hook has failed in %s's action in force (status.hooks lists no Failed run): nothing to answer with %s; "+
			"drover status %s -n %s shows the hooks' runs", key, flag, d.Name, d.Namespace))
	case 1:
	default:
		var names []string
		for _, r := range failed {
			names = append(names, fmt.Sprintf("%s attempt %d on %s", r.Name, r.Attempt, r.Cluster))
		}
		return cli.Refused(fmt.Errorf("%d hooks have failed in %s's action (%s): %s answers one; name it with "+
			`kubectl patch drpc %s -n %s --type merge -p '{"spec":{"hookDecision":{"hook":"NAME","attempt":N,"decision":"%s"}}}'`,
			len(failed), key, strings.Join(names, ", "), flag, d.Name, d.Namespace, o.Decision))
	}
	run := failed[0]
	decision := v1alpha1.HookDecision{Hook: run.Name, Attempt: run.Attempt, Decision: o.Decision}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"hookDecision": decision}})
	if err != nil {
		return fmt.Errorf("failed to encode the patch: %w", err)
	}
	if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return cli.Refused(fmt.Errorf("the API server refused the hook decision for %s: %w", key, err))
		}
		return fmt.Errorf("failed to patch DRPlacementControl %s: %w", key, err)
	}
	what := "run it again (attempt %d)"
	if o.Decision == v1alpha1.HookContinueAction {
		what = "go on past it (recorded PassedOver; attempt %d is not run)"
	}
	fmt.Fprintf(w, "Asked the hub to %s: hook %s (%s) failed on %s at attempt %d (spec.hookDecision %s).\n",
		fmt.Sprintf(what, run.Attempt+1), run.Name, run.Point, cli.Dash(run.Cluster), run.Attempt, o.Decision)
	fmt.Fprintf(w, "Follow it with `drover status %s -n %s`.\n", d.Name, d.Namespace)
	return nil
}

// recipeSteps are the lines of `drover plan` that say what the application's recipe runs in
// the action, in the order it runs it (docs/decisions/0011-application-hooks.md): on a
// relocation's source the BeforeSync hooks, the BeforeStop hooks, then each group's
// BeforeStop hooks before it stops, groups in reverse order; on the target the objects that
// run no pods, the AfterRestore hooks, each group started and waited Ready followed by its
// AfterReady hooks, the workloads no group picks, then the other AfterReady hooks. A failover
// runs nothing on its source (it may be lost). Nil without a recipe.
func recipeSteps(a *cli.App, recipe *v1alpha1.DRRecipe, action v1alpha1.DRAction, from, to string) []string {
	if recipe == nil {
		return nil
	}
	s := &recipe.Spec
	var out []string
	hooks := func(where string, p v1alpha1.HookPoint, group string) {
		for _, h := range s.Hooks {
			if h.Point == p && h.Group == group {
				out = append(out, fmt.Sprintf("%s: %s hook %s: %s", where, p, h.Name, hookSummary(&h, recipe.Namespace)))
			}
		}
	}
	src, tgt := "on "+from, "on "+to
	if action == v1alpha1.ActionRelocate {
		hooks(src, v1alpha1.HookBeforeSync, "")
		hooks(src, v1alpha1.HookBeforeStop, "")
		if len(s.Groups) > 0 {
			out = append(out, src+": stop the workloads no group picks")
		}
		for i := len(s.Groups) - 1; i >= 0; i-- {
			hooks(src, v1alpha1.HookBeforeStop, s.Groups[i].Name)
			out = append(out, fmt.Sprintf("%s: stop group %s (%s)", src, s.Groups[i].Name, groupSummary(&s.Groups[i], recipe.Namespace)))
		}
		out = append(out, src+": the final sync, once every hook above passed")
	} else if slices.ContainsFunc(s.Hooks, func(h v1alpha1.Hook) bool {
		return h.Point == v1alpha1.HookBeforeSync || h.Point == v1alpha1.HookBeforeStop
	}) {
		out = append(out, src+": no hook runs: a failover does not wait for the cluster it leaves (BeforeSync and BeforeStop hooks run on a relocation)")
	}
	out = append(out, tgt+": restore the objects that run no pods (ConfigMaps, Services, PVCs...)")
	hooks(tgt, v1alpha1.HookAfterRestore, "")
	for i := range s.Groups {
		g := &s.Groups[i]
		timeout := "10m"
		if g.ReadyTimeout != nil {
			timeout = shortDuration(g.ReadyTimeout.Duration)
		}
		out = append(out, fmt.Sprintf("%s: start group %s (%s) and wait until it is Ready (within %s)", tgt, g.Name, groupSummary(g, recipe.Namespace), timeout))
		hooks(tgt, v1alpha1.HookAfterReady, g.Name)
	}
	last := "start the workloads"
	if len(s.Groups) > 0 {
		last = "start the workloads no group picks"
	}
	out = append(out, fmt.Sprintf("%s: %s and wait until they are Ready", tgt, last))
	hooks(tgt, v1alpha1.HookAfterReady, "")
	return append(out, syncNote(a, s)...)
}

// syncNote says when BeforeSync hooks run besides a relocation: with VolSync before every sync,
// which the agent then triggers itself once per interval instead of VolSync's schedule
// (docs/decisions/0019-before-sync-hooks-drive-volsync.md); with a storage that mirrors on its
// own schedule (volrep) never, since it gives no instant to precede.
func syncNote(a *cli.App, s *v1alpha1.DRRecipeSpec) []string {
	if !slices.ContainsFunc(s.Hooks, func(h v1alpha1.Hook) bool { return h.Point == v1alpha1.HookBeforeSync }) || a.Policy == nil {
		return nil
	}
	volsync := slices.ContainsFunc(a.Policy.Spec.StorageClassBackends, func(b v1alpha1.StorageClassBackend) bool { return b.Backend == v1alpha1.BackendVolSync })
	if volsync {
		return []string{"note: BeforeSync hooks also run before every VolSync sync while the application runs: the agent triggers each sync itself, every " +
			string(a.Policy.Spec.SchedulingInterval) + ", once they passed; a hook failing with onError Fail skips that interval's sync, one with Continue syncs anyway"}
	}
	return []string{"note: BeforeSync hooks run only ahead of a relocation's final sync: the volrep storage mirrors on its own schedule, with no instant for drover to precede"}
}

// hookSummary says in a few words what a hook does, with its onError and timeout.
func hookSummary(h *v1alpha1.Hook, ns string) string {
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	var what string
	switch {
	case h.Exec != nil:
		pods := "every running pod"
		if h.Exec.Pods == v1alpha1.ExecOnePod {
			pods = "one Ready pod"
		}
		what = fmt.Sprintf("exec %q in %s of %s picked by %s", strings.Join(h.Exec.Command, " "), pods, or(h.Exec.Namespace, ns),
			metav1.FormatLabelSelector(&h.Exec.PodSelector))
		if h.Exec.Container != "" {
			what += ", container " + h.Exec.Container
		}
	case h.Job != nil:
		what = "run a Job in " + or(h.Job.Namespace, ns) + " and wait until it completes"
	case h.Scale != nil:
		what = fmt.Sprintf("scale %s %s/%s to %d", h.Scale.Kind, or(h.Scale.Namespace, ns), h.Scale.Name, ptrOr(h.Scale.Replicas))
	case h.Check != nil:
		o := h.Check.Object
		cond := h.Check.Expression
		if h.Check.Condition != nil {
			cond = fmt.Sprintf("condition %s=%s", h.Check.Condition.Type, or(string(h.Check.Condition.Status), "True"))
		}
		what = fmt.Sprintf("wait until %s %s/%s holds %s", o.Kind, or(o.Namespace, ns), o.Name, cond)
	}
	timeout := "5m"
	if h.Timeout != nil {
		timeout = shortDuration(h.Timeout.Duration)
	}
	return fmt.Sprintf("%s (onError %s, timeout %s)", what, or(string(h.OnError), string(v1alpha1.HookFail)), timeout)
}

// groupSummary names a group's objects.
func groupSummary(g *v1alpha1.RecoveryGroup, ns string) string {
	var parts []string
	for _, r := range g.Resources {
		n := r.Namespace
		if n == "" {
			n = ns
		}
		switch {
		case len(r.Names) > 0:
			parts = append(parts, fmt.Sprintf("%s %s/%s", r.Kind, n, strings.Join(r.Names, ",")))
		case r.Selector != nil:
			parts = append(parts, fmt.Sprintf("%ss of %s picked by %s", r.Kind, n, metav1.FormatLabelSelector(r.Selector)))
		default:
			parts = append(parts, fmt.Sprintf("every %s of %s", r.Kind, n))
		}
	}
	return strings.Join(parts, "; ")
}

// shortDuration prints d as a recipe spells it: 5m, not 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// loadRecipe reads the DRRecipe the DRPlacementControl names; nil when it names none, or when
// it does not exist (missing then says so: the hub does not act until it does).
func loadRecipe(ctx context.Context, c client.Reader, d *v1alpha1.DRPlacementControl) (recipe *v1alpha1.DRRecipe, missing string, err error) {
	if d.Spec.RecipeRef == nil {
		return nil, "", nil
	}
	r := &v1alpha1.DRRecipe{}
	err = c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.RecipeRef.Name}, r)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("DRRecipe %s/%s, which spec.recipeRef names, does not exist: the hub does not act on the application until it does; create it, or remove spec.recipeRef",
			d.Namespace, d.Spec.RecipeRef.Name), nil
	case err != nil:
		return nil, "", cli.ReadError("DRRecipe "+d.Namespace+"/"+d.Spec.RecipeRef.Name, err)
	}
	return r, "", nil
}
