package vrg

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// watchCreatedWorkloads wakes a group demoted by a failover or a relocation when a workload is
// created in one of its namespaces (a GitOps tool or a person applying it again), so its pass
// removes it at once (removeWorkloads): a settled secondary is otherwise not woken for a minute.
// Only creations after the agent's first list count, on the metadata watch the capture reads
// (kubeobjects): updates of workloads, frequent on a primary, wake no one. A kind the cluster
// does not serve is not watched.
func (r *Reconciler) watchCreatedWorkloads(mgr ctrl.Manager, b *builder.Builder) *builder.Builder {
	for _, gk := range kubeobjects.WorkloadKinds {
		m, err := mgr.GetRESTMapper().RESTMapping(gk)
		if err != nil {
			continue
		}
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(m.GroupVersionKind)
		b = b.WatchesMetadata(obj, handler.EnqueueRequestsFromMapFunc(r.workloadToRemovingVRGs), builder.WithPredicates(createdAfterFirstList))
	}
	return b
}

// createdAfterFirstList passes only the creations the watch sees after its first list.
var createdAfterFirstList = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// workloadToRemovingVRGs maps a workload to the groups that remove the workloads of its
// namespace: secondary with action Failover or Relocate, protecting kube objects.
func (r *Reconciler) workloadToRemovingVRGs(ctx context.Context, obj client.Object) []reconcile.Request {
	vrgs := &v1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, vrgs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list VolumeReplicationGroups for a workload", "workload", klog.KObj(obj))
		return nil
	}
	var out []reconcile.Request
	for i := range vrgs.Items {
		vrg := &vrgs.Items[i]
		if removesWorkloads(vrg) && slices.Contains(protectedNamespaces(vrg), obj.GetNamespace()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vrg)})
		}
	}
	return out
}

// removesWorkloads reports whether a group's passes remove its namespaces' workloads
// (removeWorkloads).
func removesWorkloads(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary && vrg.Spec.KubeObjectProtection != nil &&
		(vrg.Spec.Action == v1alpha1.ActionFailover || vrg.Spec.Action == v1alpha1.ActionRelocate)
}
