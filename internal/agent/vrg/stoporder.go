package vrg

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// The stop order of the application's recipe on a relocation's source in self-contained mode
// (docs/hooks.md): once the BeforeSync hooks and the BeforeStop hooks of no group passed
// (sourceHooks) and the final capture is written (removeWorkloads), the workloads of no group
// stop first; then each group of the recipe, the last first: its BeforeStop hooks, then its
// workloads, and the group before it only once they are gone with their pods (deleted in the
// foreground: a workload stays until its pods are gone). Each pass reads the workloads again and goes as far as it can;
// the hooks' runs are in status.hooks, so nothing else is remembered. While a group's hook runs
// or failed, the pass stops there as sourceHooks does (DataReady says which hook). A failover
// runs no hook on the cluster it leaves, and removes every workload at once.

// orderedStop reports whether a group stops its workloads in its recipe's order: a relocation's
// source that removes them itself (kubeObjectProtection) with a recipe of groups.
func orderedStop(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.Recipe != nil && vrg.Spec.KubeObjectProtection != nil && len(vrg.Spec.Recipe.Spec.Groups) > 0 &&
		relocationSource(vrg)
}

// stopHooks are the BeforeStop hooks sourceHooks runs before anything stops: all of them in
// the order they would run, or, when the group stops in its recipe's order, those of no group.
func stopHooks(vrg *v1alpha1.VolumeReplicationGroup) []*v1alpha1.Hook {
	if orderedStop(vrg) {
		return hooks.OfGroup(&vrg.Spec.Recipe.Spec, v1alpha1.HookBeforeStop, "")
	}
	return hooks.StopOrder(&vrg.Spec.Recipe.Spec)
}

// deleteWorkloads deletes the application's workloads: at once, or in the recipe's stop order
// as far as it goes in this pass. It returns the workloads that still exist (being deleted
// included), of the step the order stands at; none means every workload is gone.
func (r *Reconciler) deleteWorkloads(ctx context.Context, sc *scope, resources []kubeobjects.Resource, namespaces []string,
	sel kubeobjects.Selection) ([]string, error) {
	if !orderedStop(sc.vrg) {
		return kubeobjects.DeleteWorkloads(ctx, r.Client, resources, namespaces, sel)
	}
	live, err := r.liveWorkloads(ctx, resources, namespaces, sel)
	if err != nil {
		return nil, err
	}
	spec := &sc.vrg.Spec.Recipe.Spec
	plan := planOrder(spec, sc.vrg.Namespace, live)
	if len(plan.rest) > 0 {
		return r.stopWorkloads(ctx, plan.rest)
	}
	for i := len(spec.Groups) - 1; i >= 0; i-- {
		done, _ := r.runHooks(ctx, sc, hooks.OfGroup(spec, v1alpha1.HookBeforeStop, spec.Groups[i].Name), v1alpha1.ConditionDataReady)
		if !done {
			// Nothing after this stops: the group's workloads, the fence, the demotion.
			sc.stop = true
			return keys(plan.groups[i]), nil
		}
		if len(plan.groups[i]) > 0 {
			return r.stopWorkloads(ctx, plan.groups[i])
		}
	}
	return nil, nil
}

// liveWorkloads lists, from the API server, the selected workloads of the namespaces that no
// controller owns (a Job of a CronJob goes with its CronJob), but for the hooks' Jobs: a group's
// BeforeStop Job must finish, and is the group's record of its run.
func (r *Reconciler) liveWorkloads(ctx context.Context, resources []kubeobjects.Resource, namespaces []string,
	sel kubeobjects.Selection) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, ns := range namespaces {
		for _, res := range resources {
			if !kubeobjects.IsWorkload(res.GVK.GroupKind()) {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(res.GVK.GroupVersion().WithKind(res.GVK.Kind + "List"))
			if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel.Selector}); err != nil {
				return nil, fmt.Errorf("failed to list %s in %s to stop them in order: %w", res.GVK.Kind, ns, err)
			}
			for i := range list.Items {
				if o := &list.Items[i]; metav1.GetControllerOf(o) == nil && !kubeobjects.HookJob(o) {
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}

// stopWorkloads deletes the workloads not being deleted yet and returns them all: they exist
// until their deletion, their pods' included, completes.
func (r *Reconciler) stopWorkloads(ctx context.Context, objects []*unstructured.Unstructured) ([]string, error) {
	var errs []error
	for _, o := range objects {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		// Foreground: the object stays until the garbage collector has deleted its pods, so the
		// next group stops only once no pod of this one runs.
		if err := r.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s: %w", kubeobjects.Key(o), err))
		}
	}
	return keys(objects), errors.Join(errs...)
}

// keys are the objects' keys, sorted.
func keys(objects []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objects))
	for _, o := range objects {
		out = append(out, kubeobjects.Key(o))
	}
	slices.Sort(out)
	return out
}
