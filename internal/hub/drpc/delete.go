package drpc

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
)

// reconcileDelete unprotects the application on both clusters: it deletes each group (its
// agent then tears replication down, restores the PVs' reclaim policies and removes the
// metadata; the PVCs stay with the application) and removes the finalizer once both are gone.
// A cluster that cannot be reached holds the deletion, saying so: its group would otherwise
// keep protecting with nobody to remove it. The PlacementDecision is left as it is, and the OCM
// Placement this DRPlacementControl steers keeps its scheduling disabled, so the application
// stays where its data is (releasePlacement).
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *scope) (ctrl.Result, error) {
	drpc := sc.drpc
	if !controllerutil.ContainsFinalizer(drpc, Finalizer) {
		return ctrl.Result{}, nil
	}
	policy := &v1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: drpc.Spec.DRPolicyRef.Name}, policy); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get DRPolicy %s: %w", drpc.Spec.DRPolicyRef.Name, err)
		}
		// Without its policy the hub does not know the clusters: nothing it created can be
		// found, so nothing holds the deletion.
		return ctrl.Result{}, r.removeFinalizer(ctx, drpc)
	}
	sc.policy = policy
	r.observe(ctx, sc)
	var waiting, left []string
	for _, name := range policy.Spec.DRClusters {
		cv := sc.view(name)
		switch {
		case !cv.reachable() && drpc.Status.Phase == "":
			// Never deployed (its spec or policy was never valid): nothing was created there.
		case !cv.reachable():
			lost, err := r.leaveOnLostCluster(ctx, drpc, name)
			if err != nil {
				return ctrl.Result{}, err
			}
			if lost {
				left = append(left, name)
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%s is unreachable (%v); if it is gone for good, declare it lost: drover cluster lost %s", name, cv.err, name))
		case cv.vrg != nil:
			if err := r.dropLostProfiles(ctx, policy, cv); err != nil {
				return ctrl.Result{}, err
			}
			if cv.vrg.DeletionTimestamp.IsZero() {
				if err := cv.client.Delete(ctx, cv.vrg); err != nil && !apierrors.IsNotFound(err) {
					return ctrl.Result{}, fmt.Errorf("failed to delete VolumeReplicationGroup %s/%s on %s: %w", cv.vrg.Namespace, cv.vrg.Name, name, err)
				}
			}
			waiting = append(waiting, fmt.Sprintf("%s's agent is unprotecting", name))
		default:
			gone, err := groupGone(ctx, cv, drpc)
			if err != nil {
				return ctrl.Result{}, err
			}
			if !gone {
				waiting = append(waiting, fmt.Sprintf("%s's agent is unprotecting", name))
			}
		}
	}
	if len(waiting) == 0 {
		if len(left) > 0 {
			r.event(sc, "Warning", v1alpha1.EventUnprotected, "Unprotected without %s, declared lost: its group there is demoted if need be and removed when it answers again (DRCluster status.groupsToRemove)", left)
		} else {
			r.event(sc, "Normal", v1alpha1.EventUnprotected, "Unprotected on %s", policy.Spec.DRClusters)
		}
		return ctrl.Result{}, r.removeFinalizer(ctx, drpc)
	}
	before := drpc.DeepCopy()
	drpc.Status.Phase, drpc.Status.Progression = v1alpha1.PhaseDeleting, string(ProgressionDeletingGroups)
	apimeta.SetStatusCondition(&drpc.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonProgressing, Message: fmt.Sprintf("unprotecting: %v", waiting), ObservedGeneration: drpc.Generation})
	if !equality.Semantic.DeepEqual(before.Status, drpc.Status) {
		if err := r.Client.Status().Patch(ctx, drpc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to patch status of DRPlacementControl %s/%s: %w", drpc.Namespace, drpc.Name, err)
		}
		r.versions.Seen(drpc)
	}
	return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
}

// groupGone confirms on the cluster itself that a group the hub's view does not show is gone: a
// watch-backed view may not have seen a group created a moment ago, and releasing the deletion
// then would leave that group protecting with nobody to remove it. A delete is the check: a
// group that is there is deleted (the agent then unprotects); NotFound means it is gone.
func groupGone(ctx context.Context, cv *clusterView, drpc *v1alpha1.DRPlacementControl) (bool, error) {
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: drpc.Namespace, Name: drpc.Name}}
	err := cv.client.Delete(ctx, vrg)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("failed to delete VolumeReplicationGroup %s/%s on %s: %w", drpc.Namespace, drpc.Name, cv.name, err)
	}
	return false, nil
}

func (r *Reconciler) removeFinalizer(ctx context.Context, drpc *v1alpha1.DRPlacementControl) error {
	if err := r.releasePlacement(ctx, drpc); err != nil {
		return err
	}
	before := drpc.DeepCopy()
	controllerutil.RemoveFinalizer(drpc, Finalizer)
	if err := r.Client.Patch(ctx, drpc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove the finalizer of DRPlacementControl %s/%s: %w", drpc.Namespace, drpc.Name, err)
	}
	r.versions.Forget(client.ObjectKeyFromObject(drpc))
	ctrl.LoggerFrom(ctx).Info("Unprotected")
	return nil
}

// leaveOnLostCluster reports whether an unreachable cluster is declared lost; if it is, the
// application's group there is recorded in the DRCluster's status.groupsToRemove (to be demoted
// first when the application ran on the peer), so the deletion does not wait for the cluster
// and the group is removed when it answers again.
func (r *Reconciler) leaveOnLostCluster(ctx context.Context, drpc *v1alpha1.DRPlacementControl, cluster string) (bool, error) {
	drc := &v1alpha1.DRCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, drc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to get DRCluster %s: %w", cluster, err)
	}
	if drc.Spec.Lost == nil {
		return false, nil
	}
	ref := v1alpha1.GroupRef{Namespace: drpc.Namespace, Name: drpc.Name, Demote: drpc.Status.CurrentPrimary != cluster}
	for _, g := range drc.Status.GroupsToRemove {
		if g.Namespace == ref.Namespace && g.Name == ref.Name {
			return true, nil
		}
	}
	before := drc.DeepCopy()
	drc.Status.GroupsToRemove = append(drc.Status.GroupsToRemove, ref)
	// Optimistic: the DRCluster's reconciler and other deletions write the same list.
	if err := r.Client.Status().Patch(ctx, drc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return false, fmt.Errorf("failed to record the group left on DRCluster %s, declared lost: %w", cluster, err)
	}
	ctrl.LoggerFrom(ctx).Info("Leaving the group on a cluster declared lost", "cluster", cluster, "demote", ref.Demote)
	return true, nil
}

// dropLostProfiles removes from a group being deleted the S3 profiles of the policy's clusters
// declared lost: a store hosted in a lost cluster is lost with it, and the agent's unprotect
// would otherwise retry deleting the group's copy there forever. The copy stays in that store;
// if the cluster returns, its own group's removal deletes it.
func (r *Reconciler) dropLostProfiles(ctx context.Context, policy *v1alpha1.DRPolicy, cv *clusterView) error {
	lostProfiles := map[string]bool{}
	for _, name := range policy.Spec.DRClusters {
		drc := &v1alpha1.DRCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, drc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("failed to get DRCluster %s: %w", name, err)
		}
		if drc.Spec.Lost != nil && name != cv.name {
			lostProfiles[drc.Spec.S3ProfileName] = true
		}
	}
	kept := slices.DeleteFunc(slices.Clone(cv.vrg.Spec.S3Profiles), func(p v1alpha1.S3Profile) bool { return lostProfiles[p.Name] })
	if len(kept) == len(cv.vrg.Spec.S3Profiles) || len(kept) == 0 {
		return nil
	}
	before := cv.vrg.DeepCopy()
	cv.vrg.Spec.S3Profiles = kept
	if err := cv.client.Patch(ctx, cv.vrg, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to remove the S3 profiles of lost clusters from VolumeReplicationGroup %s/%s on %s: %w", cv.vrg.Namespace, cv.vrg.Name, cv.name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Removed the S3 profiles of lost clusters from a group being deleted", "cluster", cv.name)
	return nil
}
