package vrg

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// The restore order of the application's recipe (docs/hooks.md, decisions/0011), on a group
// promoted by a failover or relocation in self-contained mode, where the agent creates the
// captured objects itself. Once the volumes are restored, in steps:
//
//  1. the objects that run no pods (the namespaces, ConfigMaps, Secrets, Services, ...);
//  2. the AfterRestore hooks (Jobs and checks), before any workload of the application exists;
//  3. each group of the recipe in its order: its workloads created, then waited for until they
//     are Ready as WorkloadsReady judges workloads (a Job: complete), then the group's
//     AfterReady hooks; the next group starts only then;
//  4. the workloads no group picks, last (their AfterReady hooks run once WorkloadsReady is
//     True, targetHooks).
//
// Until the last step, KubeObjectsReady stays False (Progressing, or HookRunning and HookFailed
// while a hook runs or failed), so the hub does not count the promotion done and no capture
// replaces the stored one with a part of the application; WorkloadsReady says the same. A pass
// goes as far as it can and requeues: hooks run off the workers (hooks.go), and a group's
// workloads are looked at every requeueWorkloads. The step reached, with when it began, is the
// annotation AnnotationRestoreOrder, of the recipe's action: a restarted agent goes on from
// there, and a group's wait is bounded from its start by its readyTimeout. A group not Ready in
// time holds the restore with its workloads' reason (PodsRefused, PodsNotRunning) and what they
// lack; the restore goes on once they are Ready. A recipe with neither groups nor AfterRestore
// hooks restores every object at once, as without a recipe.

// AnnotationRestoreOrder records the step of the recipe's restore order a promoted group has
// reached: "<step>/<RFC 3339 start>/<recipe action>" (order.go).
const AnnotationRestoreOrder = "drover.io/restore-order"

// Steps of the restore order; a group's step is stepGroups plus its index, and the step after
// the last group restores the workloads of no group.
const (
	stepObjects = iota
	stepAfterRestore
	stepGroups
)

// defaultReadyTimeout bounds a group's wait to be Ready when the recipe sets none.
const defaultReadyTimeout = 10 * time.Minute

// orderAt is a step of the restore order and when it began.
type orderAt struct {
	step  int
	since time.Time
}

// orderedRestore reports whether a promoted group restores its objects in its recipe's order:
// it restores them (kubeObjectProtection) and its recipe has groups or AfterRestore hooks.
func orderedRestore(vrg *v1alpha1.VolumeReplicationGroup) bool {
	rc := vrg.Spec.Recipe
	return rc != nil && vrg.Spec.KubeObjectProtection != nil &&
		(len(rc.Spec.Groups) > 0 || len(hooks.OfPoints(&rc.Spec, v1alpha1.HookAfterRestore)) > 0)
}

// orderPending reports whether a promoted group's restore order has not reached its end for
// the group's generation: its workloads are not all created yet.
func orderPending(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return promoting(vrg) && orderedRestore(vrg) && vrg.Annotations[AnnotationKubeObjectsRestored] != generation(vrg)
}

// recordedOrder is the step the group's annotation records for the recipe's action; the first
// step, from now, when it records none for it.
func recordedOrder(vrg *v1alpha1.VolumeReplicationGroup, now time.Time) orderAt {
	parts := strings.SplitN(vrg.Annotations[AnnotationRestoreOrder], "/", 3)
	if len(parts) != 3 || parts[2] != vrg.Spec.Recipe.Action {
		return orderAt{step: stepObjects, since: now}
	}
	step, err := strconv.Atoi(parts[0])
	since, terr := time.Parse(time.RFC3339, parts[1])
	if err != nil || terr != nil || step < stepObjects {
		return orderAt{step: stepObjects, since: now}
	}
	return orderAt{step: step, since: since}
}

func (a orderAt) annotation(action string) string {
	return fmt.Sprintf("%d/%s/%s", a.step, a.since.UTC().Format(time.RFC3339), action)
}

// orderPlan is a capture's objects by step of the restore order.
type orderPlan struct {
	// base are the objects that run no pods.
	base []*unstructured.Unstructured
	// groups are the workloads of each group of the recipe, in the recipe's order.
	groups [][]*unstructured.Unstructured
	// rest are the workloads of no group.
	rest []*unstructured.Unstructured
}

// planOrder sorts the objects into the steps of the recipe's order: a workload goes to the
// first group that picks it. A group resource's empty namespace is the recipe's, that is, the
// group's own (ns).
func planOrder(spec *v1alpha1.DRRecipeSpec, ns string, objects []*unstructured.Unstructured) orderPlan {
	plan := orderPlan{groups: make([][]*unstructured.Unstructured, len(spec.Groups))}
	for _, o := range objects {
		if !kubeobjects.IsWorkload(o.GroupVersionKind().GroupKind()) {
			plan.base = append(plan.base, o)
			continue
		}
		i := slices.IndexFunc(spec.Groups, func(g v1alpha1.RecoveryGroup) bool {
			return slices.ContainsFunc(g.Resources, func(res v1alpha1.RecipeResources) bool { return picks(res, ns, o) })
		})
		if i < 0 {
			plan.rest = append(plan.rest, o)
			continue
		}
		plan.groups[i] = append(plan.groups[i], o)
	}
	return plan
}

// recipeKinds are the kinds a recovery group may hold.
var recipeKinds = map[v1alpha1.RecipeWorkloadKind]schema.GroupKind{
	v1alpha1.RecipeDeployment: kubeobjects.KindDeployment, v1alpha1.RecipeStatefulSet: kubeobjects.KindSTS,
	v1alpha1.RecipeDaemonSet: kubeobjects.KindDaemonSet, v1alpha1.RecipeJob: kubeobjects.KindJob,
}

// picks reports whether a group's resources pick an object: its kind, its namespace, and its
// name among names, its labels matching the selector, or every object of the kind.
func picks(res v1alpha1.RecipeResources, ns string, o *unstructured.Unstructured) bool {
	if res.Namespace != "" {
		ns = res.Namespace
	}
	if recipeKinds[res.Kind] != o.GroupVersionKind().GroupKind() || o.GetNamespace() != ns {
		return false
	}
	switch {
	case len(res.Names) > 0:
		return slices.Contains(res.Names, o.GetName())
	case res.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(res.Selector)
		return err == nil && sel.Matches(labels.Set(o.GetLabels()))
	}
	return true
}

// stepResult is what one step of the order did in a pass.
type stepResult struct {
	res  kubeobjects.RestoreResult
	done bool
	// waiting is KubeObjectsReady while the step is not done; requeue when to look again.
	waiting *metav1.Condition
	requeue ctrl.Result
	err     error
}

// restoreObjects restores a promoted group's objects: at once, or in its recipe's order as far
// as this pass goes. waiting is KubeObjectsReady while the order has not reached its end, nil
// once every object is restored (or when res refuses some, or err).
func (r *Reconciler) restoreObjects(ctx context.Context, sc *scope, objects []*unstructured.Unstructured) (
	res kubeobjects.RestoreResult, waiting *metav1.Condition, result ctrl.Result, err error) {
	// A hook's Job is its attempt's on the cluster it ran on: restored here it would run again.
	// A capture leaves it out (kubeobjects.Skip); one an older agent wrote may hold it.
	objects = slices.DeleteFunc(slices.Clone(objects), kubeobjects.HookJob)
	if !orderedRestore(sc.vrg) {
		res, err = kubeobjects.Restore(ctx, r.Client, objects, fieldOwner)
		return res, nil, ctrl.Result{}, err
	}
	recipe := sc.vrg.Spec.Recipe
	keepRunsOfAction(sc.vrg)
	plan := planOrder(&recipe.Spec, sc.vrg.Namespace, objects)
	began := recordedOrder(sc.vrg, time.Now())
	at := began
	for {
		s := r.orderStep(ctx, sc, plan, at)
		res.Created, res.Adopted, res.Waiting = res.Created+s.res.Created, res.Adopted+s.res.Adopted, s.res.Waiting
		res.Refused = s.res.Refused
		if s.err != nil || len(s.res.Refused) > 0 || !s.done {
			waiting, result, err = s.waiting, s.requeue, s.err
			break
		}
		if at.step == stepGroups+len(plan.groups) {
			break
		}
		at = orderAt{step: at.step + 1, since: time.Now()}
		ctrl.LoggerFrom(ctx).Info("The restore order goes on", "step", describeStep(&recipe.Spec, at.step))
	}
	if at != began {
		if aerr := r.annotate(ctx, sc, AnnotationRestoreOrder, at.annotation(recipe.Action)); aerr != nil {
			return res, waiting, ctrl.Result{}, aerr
		}
	}
	return res, waiting, result, err
}

// describeStep names a step of the order for a log or a condition.
func describeStep(spec *v1alpha1.DRRecipeSpec, step int) string {
	switch {
	case step == stepObjects:
		return "the objects that run no pods"
	case step == stepAfterRestore:
		return "the AfterRestore hooks"
	case step < stepGroups+len(spec.Groups):
		return fmt.Sprintf("group %s (%d of %d)", spec.Groups[step-stepGroups].Name, step-stepGroups+1, len(spec.Groups))
	}
	return "the workloads of no group"
}

// orderStep runs one step of the order in this pass.
func (r *Reconciler) orderStep(ctx context.Context, sc *scope, plan orderPlan, at orderAt) stepResult {
	spec := &sc.vrg.Spec.Recipe.Spec
	switch {
	case at.step == stepObjects, at.step >= stepGroups+len(spec.Groups):
		objects := plan.base
		if at.step != stepObjects {
			objects = plan.rest
		}
		res, err := kubeobjects.Restore(ctx, r.Client, objects, fieldOwner)
		return stepResult{res: res, done: err == nil && len(res.Refused) == 0, err: err}
	case at.step == stepAfterRestore:
		return r.orderHooks(ctx, sc, hooks.OfPoints(spec, v1alpha1.HookAfterRestore), at.step)
	}
	i := at.step - stepGroups
	return r.startGroup(ctx, sc, i, plan.groups[i], at.since)
}

// orderHooks runs the hooks of a step of the order; the step is done once they passed.
func (r *Reconciler) orderHooks(ctx context.Context, sc *scope, list []*v1alpha1.Hook, step int) stepResult {
	done, result := r.runHooks(ctx, sc, list, v1alpha1.ConditionKubeObjectsReady)
	if done {
		return stepResult{done: true}
	}
	// runHooks says which hook runs or failed (sc.hookCondition, written over this one).
	return stepResult{waiting: ptrTo(orderCondition(sc.vrg, false, "", step, "waiting for its hooks")), requeue: result}
}

// orderCondition is KubeObjectsReady while the order stands at step: reason Progressing
// unless given.
func orderCondition(vrg *v1alpha1.VolumeReplicationGroup, timedOut bool, reason string, step int, what string) metav1.Condition {
	if reason == "" {
		reason = v1alpha1.ReasonProgressing
	}
	spec := &vrg.Spec.Recipe.Spec
	msg := fmt.Sprintf("the objects are restored in the order of recipe %s, at %s: %s", vrg.Spec.Recipe.Name, describeStep(spec, step), what)
	if timedOut {
		msg += "; what comes after it starts once it is Ready: fix what it lacks"
	}
	return condition(v1alpha1.ConditionKubeObjectsReady, false, reason, msg)
}

// startGroup creates the group's workloads that do not exist, waits until every one is Ready,
// then runs the group's AfterReady hooks.
func (r *Reconciler) startGroup(ctx context.Context, sc *scope, i int, objects []*unstructured.Unstructured, since time.Time) stepResult {
	g := &sc.vrg.Spec.Recipe.Spec.Groups[i]
	var missing []*unstructured.Unstructured
	var problems []workloadProblem
	for _, o := range objects {
		p, found, err := r.readiness(ctx, o)
		switch {
		case err != nil:
			return stepResult{err: err}
		case !found:
			missing = append(missing, o)
		case p != nil:
			problems = append(problems, *p)
		}
	}
	var out stepResult
	if len(missing) > 0 {
		out.res, out.err = kubeobjects.Restore(ctx, r.Client, missing, fieldOwner)
		if out.err != nil || len(out.res.Refused) > 0 {
			return out
		}
		names := make([]string, 0, len(missing))
		for _, o := range missing {
			names = append(names, kubeobjects.Key(o))
		}
		problems = append(problems, workloadProblem{v1alpha1.ReasonProgressing, "created " + strings.Join(names, ", ")})
	}
	if len(problems) == 0 {
		return r.orderHooks(ctx, sc, hooks.OfGroup(&sc.vrg.Spec.Recipe.Spec, v1alpha1.HookAfterReady, g.Name), stepGroups+i)
	}
	timeout := defaultReadyTimeout
	if g.ReadyTimeout != nil && g.ReadyTimeout.Duration > 0 {
		timeout = g.ReadyTimeout.Duration
	}
	p := problems[0]
	what := fmt.Sprintf("waiting until its workloads are Ready (since %s, within %s): %s", since.UTC().Format(time.RFC3339), timeout, p.message)
	if len(problems) > 1 {
		what += fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	late := time.Since(since) > timeout
	reason := ""
	if late {
		reason = lateReason(p.reason)
		what = fmt.Sprintf("not Ready within its readyTimeout %s: %s", timeout, p.message)
	}
	out.waiting = ptrTo(orderCondition(sc.vrg, late, reason, stepGroups+i, what))
	out.requeue = ctrl.Result{RequeueAfter: requeueWorkloads}
	return out
}

// lateReason is the reason of a group past its readyTimeout: its workload's, or PodsNotRunning
// for one just created.
func lateReason(reason string) string {
	if reason == v1alpha1.ReasonProgressing {
		return v1alpha1.ReasonPodsNotRunning
	}
	return reason
}

// readiness reads a workload of a group from the API server and says why it is not Ready (nil
// when it is), as WorkloadsReady judges workloads; found is false when it does not exist.
func (r *Reconciler) readiness(ctx context.Context, o *unstructured.Unstructured) (p *workloadProblem, found bool, err error) {
	key := client.ObjectKeyFromObject(o)
	var obj client.Object
	switch o.GroupVersionKind().GroupKind() {
	case kubeobjects.KindDeployment:
		obj = &appsv1.Deployment{}
	case kubeobjects.KindSTS:
		obj = &appsv1.StatefulSet{}
	case kubeobjects.KindDaemonSet:
		obj = &appsv1.DaemonSet{}
	default:
		obj = &batchv1.Job{}
	}
	if err := r.APIReader.Get(ctx, key, obj); apierrors.IsNotFound(err) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("failed to get %s of the restore order: %w", kubeobjects.Key(o), err)
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return r.deploymentProblem(ctx, w), true, nil
	case *appsv1.StatefulSet:
		return r.statefulSetProblem(ctx, w), true, nil
	case *appsv1.DaemonSet:
		return daemonSetProblem(w), true, nil
	case *batchv1.Job:
		return jobProblem(w), true, nil
	}
	return nil, true, nil
}

// daemonSetProblem says why a DaemonSet has fewer available pods than it schedules; nil when
// it has them.
func daemonSetProblem(d *appsv1.DaemonSet) *workloadProblem {
	if d.Status.ObservedGeneration >= d.Generation && d.Status.NumberAvailable >= d.Status.DesiredNumberScheduled {
		return nil
	}
	return &workloadProblem{v1alpha1.ReasonPodsNotRunning, fmt.Sprintf("DaemonSet %s has %d of %d pods available",
		klog.KObj(d), d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)}
}

// jobProblem says why a Job is not complete; nil once it is.
func jobProblem(j *batchv1.Job) *workloadProblem {
	for _, c := range j.Status.Conditions {
		switch {
		case c.Status != corev1.ConditionTrue:
		case c.Type == batchv1.JobComplete:
			return nil
		case c.Type == batchv1.JobFailed:
			return &workloadProblem{v1alpha1.ReasonPodsNotRunning, fmt.Sprintf("Job %s failed: %s: %s", klog.KObj(j), c.Reason, c.Message)}
		}
	}
	return &workloadProblem{v1alpha1.ReasonPodsNotRunning, fmt.Sprintf("Job %s has not completed (%d pods active)", klog.KObj(j), j.Status.Active)}
}
