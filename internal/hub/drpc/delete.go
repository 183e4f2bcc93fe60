package drpc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	lost, err := r.lostClusters(ctx, policy)
	if err != nil {
		return ctrl.Result{}, err
	}
	order := releaseOrder(sc, lost)
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
			msg, err := r.releaseGroup(ctx, sc, cv, order)
			if err != nil {
				return ctrl.Result{}, err
			}
			waiting = append(waiting, msg)
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

// The order in which unprotect removes the groups. The storage decides it: ceph-csi disables
// mirroring only of a primary image, after which rbd-mirror deletes the peer's non-primary
// copies; it never disables a secondary's, and releases a secondary (answers success, changing
// nothing) only while it is up+replaying a live primary, InvalidArgument otherwise, and
// csi-addons then keeps the VolumeReplication and the PVC's pvc-protection finalizer and retries
// with a backoff that grows to many minutes (ceph-csi internal/rbd/replication.go, csi-addons
// volumereplication_controller.go).
//
// Ramen removes the secondary's group first and the primary's after. That works while the
// secondary replays, and sticks in every other state: a secondary still resyncing after a
// failover, a split-brained one, one whose primary's cluster is unreachable or lost, two
// secondaries (a relocation interrupted between the demotion and the promotion). Waiting for the
// secondary to replay does not help either: without a live primary it never will. So drover
// removes the primary's group first: its agent deletes its VolumeReplications, ceph-csi disables
// their mirroring (the volumes stay, ordinary writable volumes with the application's data) and
// rbd-mirror deletes the secondary's copies; the secondary's group goes after, and its
// VolumeReplications are released at once (the image is gone, which csi-addons takes as done),
// whatever state the copy was in. The secondary's copies would go either way: a volume whose
// mirroring is disabled has no replica. While a primary group may be left (reachable, or on a
// cluster that does not answer), a secondary's group is not touched.
//
// With no primary left, one group must become the one whose mirroring is disabled:
//   - the peer's cluster is declared lost: the survivor's group. Its volumes are the last copy;
//     its agent promotes each VolumeReplication before deleting it
//     (v1alpha1.AnnotationUnprotectAsPrimary; csi-addons forces the promotion, the peer being
//     unreachable), so the data stays as ordinary volumes;
//   - both groups are secondary: the current primary's (the relocation's source, which holds
//     every write), promoted likewise; the other goes once it is gone;
//   - one secondary whose peer's group is gone: released as it is (its copy went with the
//     peer's mirroring).
//
// A VolumeReplication the storage still keeps is reported by the agent (DataReady reason
// ReplicationNotReleased) and repeated in the DRPlacementControl's Available condition.

// release is how unprotect removes one cluster's group.
type release int

const (
	// releaseNow deletes the group: a primary's, or a secondary's whose primary is gone.
	releaseNow release = iota
	// releaseAsPrimary asks the group's agent to promote its volumes, then deletes it.
	releaseAsPrimary
	// releaseAfterPrimary leaves a secondary's group until the primary's is gone.
	releaseAfterPrimary
)

// releaseOrder decides how each reachable cluster's group is removed (the order above). lost
// are the policy's clusters declared lost.
func releaseOrder(sc *scope, lost map[string]bool) map[string]release {
	order := map[string]release{}
	primaryLeft := false
	var secondaries []string
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		switch {
		case lost[name]:
		case !cv.reachable():
			// Its group may be the primary: a secondary waits for it, as the deletion does.
			primaryLeft = primaryLeft || sc.drpc.Status.Phase != ""
		case cv.vrg == nil:
		case cv.vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary:
			primaryLeft = true
			order[name] = releaseNow
		default:
			secondaries = append(secondaries, name)
		}
	}
	if primaryLeft {
		for _, name := range secondaries {
			order[name] = releaseAfterPrimary
		}
		return order
	}
	switch {
	case len(secondaries) == 2:
		first := secondaries[0]
		if slices.Contains(secondaries, sc.drpc.Status.CurrentPrimary) {
			first = sc.drpc.Status.CurrentPrimary
		}
		for _, name := range secondaries {
			order[name] = releaseAfterPrimary
		}
		order[first] = releaseAsPrimary
	case len(secondaries) == 1 && slices.Contains(slices.Collect(maps.Values(lost)), true):
		order[secondaries[0]] = releaseAsPrimary
	case len(secondaries) == 1:
		order[secondaries[0]] = releaseNow
	}
	return order
}

// lostClusters are the policy's clusters declared lost.
func (r *Reconciler) lostClusters(ctx context.Context, policy *v1alpha1.DRPolicy) (map[string]bool, error) {
	lost := map[string]bool{}
	for _, name := range policy.Spec.DRClusters {
		drc := &v1alpha1.DRCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, drc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed to get DRCluster %s: %w", name, err)
		}
		lost[name] = drc.Spec.Lost != nil
	}
	return lost, nil
}

// releaseGroup removes one cluster's group as order says and returns what the deletion waits
// for there.
func (r *Reconciler) releaseGroup(ctx context.Context, sc *scope, cv *clusterView, order map[string]release) (string, error) {
	if err := r.dropLostProfiles(ctx, sc.policy, cv); err != nil {
		return "", err
	}
	switch order[cv.name] {
	case releaseAfterPrimary:
		return fmt.Sprintf("%s's group is secondary: it is removed once the primary's is gone, whose mirroring, disabled, removes %s's copy "+
			"(the storage releases a secondary volume only while it replays a primary)", cv.name, cv.name), nil
	case releaseAsPrimary:
		if cv.vrg.Annotations[v1alpha1.AnnotationUnprotectAsPrimary] != "true" {
			before := cv.vrg.DeepCopy()
			if cv.vrg.Annotations == nil {
				cv.vrg.Annotations = map[string]string{}
			}
			cv.vrg.Annotations[v1alpha1.AnnotationUnprotectAsPrimary] = "true"
			if err := cv.client.Patch(ctx, cv.vrg, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
				return "", fmt.Errorf("failed to ask VolumeReplicationGroup %s/%s on %s to release its volumes as primary: %w", cv.vrg.Namespace, cv.vrg.Name, cv.name, err)
			}
			ctrl.LoggerFrom(ctx).Info("Unprotecting a secondary group as primary: it holds the last copy", "cluster", cv.name)
		}
	}
	if cv.vrg.DeletionTimestamp.IsZero() {
		if err := cv.client.Delete(ctx, cv.vrg); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("failed to delete VolumeReplicationGroup %s/%s on %s: %w", cv.vrg.Namespace, cv.vrg.Name, cv.name, err)
		}
	}
	msg := fmt.Sprintf("%s's agent is unprotecting", cv.name)
	if c := apimeta.FindStatusCondition(cv.vrg.Status.Conditions, v1alpha1.ConditionDataReady); c != nil && !cv.vrg.DeletionTimestamp.IsZero() &&
		c.Status == metav1.ConditionFalse && strings.HasPrefix(c.Message, "unprotecting: ") {
		msg += ": " + strings.TrimPrefix(c.Message, "unprotecting: ")
	}
	return msg, nil
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
