package drcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

// A cluster declared lost (spec.lost, `drover cluster lost NAME`) holds nothing: a
// DRPlacementControl is deleted without it, recording its group there in
// status.groupsToRemove. When the cluster answers again, whether or not it is still declared
// lost, the hub works through that list before anything else happens there: a group whose
// application ran on the peer when it was deleted may be a stale primary (its workload restarts
// with the cluster), so it is demoted first (secondary, action Failover: the agent stops the
// workload, fences and demotes its volumes) and removed only once Secondary; any other group
// is removed at once (its agent unprotects; the application keeps running there, the one copy
// of it). Groups of DRPlacementControls that still exist are the DRPlacementControl's job: it
// demotes a returning old primary the moment it is reachable, as after any failover.

// fencedCondition is Fenced: True while the cluster is declared lost.
func fencedCondition(drc *v1alpha1.DRCluster, probeErr error) metav1.Condition {
	if drc.Spec.Lost == nil {
		return metav1.Condition{Type: v1alpha1.ConditionFenced, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnfenced,
			Message: "drover does not fence clusters; a failover demotes the old primary's groups when it returns"}
	}
	if errors.Is(probeErr, gateway.ErrNoKubeconfig) {
		return metav1.Condition{Type: v1alpha1.ConditionFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDeclaredLost,
			Message: fmt.Sprintf("declared lost (%s): deletions and actions do not wait for it and no action may target it; "+
				"the hub holds no kubeconfig for it, so it cannot tell when it answers again: %s; the hub then demotes its groups whose application runs on the peer before anything else",
				drc.Spec.Lost.Reason, rejoinLost(drc))}
	}
	if probeErr != nil {
		return metav1.Condition{Type: v1alpha1.ConditionFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDeclaredLost,
			Message: fmt.Sprintf("declared lost (%s): deletions and actions do not wait for it and no action may target it; "+
				"if it answers again, the hub demotes its groups whose application runs on the peer before anything else", drc.Spec.Lost.Reason)}
	}
	left := "no group is left to remove"
	if n := len(drc.Status.GroupsToRemove); n > 0 {
		left = fmt.Sprintf("%d group(s) left to demote and remove: %s", n, groupNames(drc.Status.GroupsToRemove))
	}
	return metav1.Condition{Type: v1alpha1.ConditionFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonLostClusterReturned,
		Message: fmt.Sprintf("declared lost (%s) but it answers again: %s; remove spec.lost (drover cluster lost %s --undo) once none is left",
			drc.Spec.Lost.Reason, left, drc.Name)}
}

// rejoinLost says how a cluster declared lost with no kubeconfig on this hub is reached again:
// the restore that declared it joins it, and lifts its own declaration; one a person declared
// is joined by drover cluster join.
func rejoinLost(drc *v1alpha1.DRCluster) string {
	if _, ok := drc.Annotations[v1alpha1.AnnotationLostDeclaredByRestore]; ok {
		return fmt.Sprintf("once it answers, run drover hub restore again with its --cluster-kubeconfig, which joins %s and lifts this declaration", drc.Name)
	}
	return fmt.Sprintf("once it answers, join it (drover cluster join %s), then lift the declaration (drover cluster lost %s --undo --yes) once its Fenced condition says no group is left to remove",
		drc.Name, drc.Name)
}

func groupNames(refs []v1alpha1.GroupRef) string {
	names := make([]string, 0, len(refs))
	for _, g := range refs {
		names = append(names, g.Namespace+"/"+g.Name)
	}
	return strings.Join(names, ", ")
}

// removeLeftGroups works through status.groupsToRemove on a cluster that answers, one step per
// group and pass, and keeps in the list the groups that are not gone yet.
func (r *Reconciler) removeLeftGroups(ctx context.Context, drc *v1alpha1.DRCluster, cl client.Client) {
	var keep []v1alpha1.GroupRef
	for _, ref := range drc.Status.GroupsToRemove {
		gone, err := r.removeLeftGroup(ctx, drc, cl, ref)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to remove a group left on the cluster", "group", ref.Namespace+"/"+ref.Name)
		}
		if !gone {
			keep = append(keep, ref)
		}
	}
	drc.Status.GroupsToRemove = keep
}

// removeLeftGroup takes one step towards removing a group left on the cluster and reports
// whether it is gone.
func (r *Reconciler) removeLeftGroup(ctx context.Context, drc *v1alpha1.DRCluster, cl client.Client, ref v1alpha1.GroupRef) (bool, error) {
	vrg := &v1alpha1.VolumeReplicationGroup{}
	err := cl.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vrg)
	switch {
	case apierrors.IsNotFound(err):
		r.eventf(drc, corev1.EventTypeNormal, v1alpha1.EventGroupRemoved, "VolumeReplicationGroup %s/%s, left on %s when its DRPlacementControl was deleted, is removed",
			ref.Namespace, ref.Name, drc.Name)
		return true, nil
	case err != nil:
		return false, err
	case !vrg.DeletionTimestamp.IsZero():
		return false, nil // its agent is unprotecting
	}
	if ref.Demote && vrg.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		before := vrg.DeepCopy()
		vrg.Spec.ReplicationState, vrg.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover
		if err := cl.Patch(ctx, vrg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			return false, fmt.Errorf("failed to demote VolumeReplicationGroup %s/%s on %s: %w", ref.Namespace, ref.Name, drc.Name, err)
		}
		r.eventf(drc, corev1.EventTypeWarning, v1alpha1.EventGroupDemoted,
			"VolumeReplicationGroup %s/%s on %s may be a stale primary (its application ran on the peer when its DRPlacementControl was deleted): demoting it before removing it",
			ref.Namespace, ref.Name, drc.Name)
		return false, nil
	}
	if ref.Demote && (vrg.Status.State != v1alpha1.StateSecondary || vrg.Status.ObservedGeneration != vrg.Generation) {
		return false, nil // the agent stops the workload and demotes
	}
	if err := cl.Delete(ctx, vrg); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("failed to delete VolumeReplicationGroup %s/%s on %s: %w", ref.Namespace, ref.Name, drc.Name, err)
	}
	return false, nil
}

// recordLostTransition records an event when spec.lost was set or removed, or when a cluster
// declared lost answers again.
func (r *Reconciler) recordLostTransition(before, after *v1alpha1.DRCluster) {
	was := apimeta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionFenced)
	is := apimeta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionFenced)
	if is == nil {
		return
	}
	wasLost, isLost := was != nil && was.Status == metav1.ConditionTrue, is.Status == metav1.ConditionTrue
	switch {
	case isLost && !wasLost:
		r.eventf(after, corev1.EventTypeWarning, v1alpha1.EventClusterDeclaredLost, "Cluster %s is declared lost: %s", after.Name, after.Spec.Lost.Reason)
	case !isLost && wasLost:
		r.eventf(after, corev1.EventTypeNormal, v1alpha1.EventClusterLostCleared, "Cluster %s is no longer declared lost", after.Name)
	}
	if isLost && is.Reason == v1alpha1.ReasonLostClusterReturned && (was == nil || was.Reason != v1alpha1.ReasonLostClusterReturned) {
		r.eventf(after, corev1.EventTypeWarning, v1alpha1.EventLostClusterReturned, "Cluster %s, declared lost, answers again: %s", after.Name, is.Message)
	}
}

func (r *Reconciler) eventf(drc *v1alpha1.DRCluster, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(drc, nil, eventType, reason, reason, note, args...)
	}
}
