package drill

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// awaitWorkloads waits until every Deployment, StatefulSet and DaemonSet of the sandboxes has
// its pods Ready, as its controller counts them for the spec it last observed.
func (r *Reconciler) awaitWorkloads(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.step(StepStartingWorkloads).Finished != nil {
		return ctrl.Result{}, nil
	}
	var ready, waiting []string
	for _, ns := range slices.Sorted(maps.Values(sc.namespaces)) {
		r2, w, err := r.workloadsIn(ctx, ns)
		if err != nil {
			return ctrl.Result{}, err
		}
		ready, waiting = append(ready, r2...), append(waiting, w...)
	}
	if len(waiting) > 0 {
		sc.waiting(StepStartingWorkloads, "waiting for "+strings.Join(waiting, ", "))
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil
	}
	msg := "no workloads to start"
	if len(ready) > 0 {
		msg = "Ready: " + strings.Join(ready, ", ")
	}
	sc.finish(StepStartingWorkloads, v1alpha1.DrillResultPassed, msg)
	return ctrl.Result{}, nil
}

// workloadsIn returns the workloads of a namespace that are Ready, and the others with their
// ready count.
func (r *Reconciler) workloadsIn(ctx context.Context, ns string) (ready, waiting []string, err error) {
	add := func(kind, name string, gen, observed int64, want, have int32) {
		what := fmt.Sprintf("%s %s/%s", kind, ns, name)
		if observed >= gen && have >= want {
			ready = append(ready, what)
			return
		}
		waiting = append(waiting, fmt.Sprintf("%s (%d/%d Ready)", what, have, want))
	}
	deployments := &appsv1.DeploymentList{}
	if err := r.APIReader.List(ctx, deployments, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("failed to list Deployments in %s: %w", ns, err)
	}
	for _, d := range deployments.Items {
		add("Deployment", d.Name, d.Generation, d.Status.ObservedGeneration, ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas)
	}
	sets := &appsv1.StatefulSetList{}
	if err := r.APIReader.List(ctx, sets, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("failed to list StatefulSets in %s: %w", ns, err)
	}
	for _, s := range sets.Items {
		add("StatefulSet", s.Name, s.Generation, s.Status.ObservedGeneration, ptr.Deref(s.Spec.Replicas, 1), s.Status.ReadyReplicas)
	}
	daemons := &appsv1.DaemonSetList{}
	if err := r.APIReader.List(ctx, daemons, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("failed to list DaemonSets in %s: %w", ns, err)
	}
	for _, d := range daemons.Items {
		add("DaemonSet", d.Name, d.Generation, d.Status.ObservedGeneration, d.Status.DesiredNumberScheduled, d.Status.NumberReady)
	}
	return ready, waiting, nil
}
