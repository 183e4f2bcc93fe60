package vrg

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// On a secondary, the PV of a VolRep PVC is the replica of the primary's volume: the storage
// mirrors into it, and a later promotion here (a failover back) restores the PVC onto it. When
// the application deletes such a PVC on the secondary (a GitOps tool prunes it with the
// workload, a StatefulSet with persistentVolumeClaimRetentionPolicy whenDeleted: Delete is
// removed from the old primary), the PVC is first demoted like any other (consumers gone, then
// secondary with resync), and only then does its deletion complete; the replica stays: the PV
// keeps reclaim policy Retain, so neither the PV nor its image is deleted. Restoring the
// original reclaim policy there, as unprotecting does, would delete the only copy of the data
// on this cluster, and a later failover back would start from an empty volume. The PVC's
// VolumeReplication is deleted: csi-addons holds a PVC's deletion with its finalizer
// replication.storage.openshift.io/pvc-protection until its VolumeReplication is gone
// (finalizers.go), and a PVC left Terminating would collide with the one a failover back
// restores. The PV is cleaned up when the group is deleted (releaseKeptReplicas). A VolSync PVC
// has no replica of its own (its secondary receives into VolSync's volumes): it is unprotected
// as usual.

// keepReplica releases a VolRep PVC the application deleted on a secondary, once demotePVC
// has made it secondary (so the storage resyncs it from the primary), keeping its replica: its
// VolumeReplication is deleted (so the storage lets the PVC go), then drover's finalizer and
// label are removed. It returns Done once the PVC is released, a Done with a message while the
// volume does not replay yet, else what it waits for.
//
// ceph-csi releases a secondary volume only while it is up+replaying its peer's primary, and
// answers InvalidArgument otherwise; csi-addons then keeps the VolumeReplication and the PVC's
// pvc-protection finalizer and retries with a backoff that grows to many minutes
// (volrep.Backend.Cleanup). After a failover the old primary's volume is first resynced, and
// replays the new primary only once it holds its first snapshot. So the VolumeReplication is
// deleted only once csi-addons reports the volume resyncing from the primary, or in sync with a
// demoted peer, which the peer's promotion ends a moment later (volrep.Releasable); until then,
// and while the storage has not yet released it, the PVC keeps drover's marks and its message
// says what it waits for (pending), so that the group reports it rather than a PVC silently
// Terminating.
//
// A group promoted before that (a failover or a relocation back to this cluster) releases such a
// PVC as primary instead (asPrimary): its VolumeReplication is promoted, then deleted, which the
// storage always lets go, and the PV, kept, is the replica the restore binds the PVC to again.
func (r *Reconciler) keepReplica(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim, asPrimary bool) (replication.Result, error) {
	vr := &replicationv1alpha1.VolumeReplication{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(pvc), vr)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return replication.Result{}, fmt.Errorf("failed to get VolumeReplication %s: %w", klog.KObj(pvc), err)
	case !ownVolumeReplication(sc, vr):
	case asPrimary:
		return volrep.Release(ctx, r.Client, vr, true), nil
	case !vr.DeletionTimestamp.IsZero():
		return pending(volrep.NotReleased(vr, time.Now()).Message), nil
	case finalSyncOpen(sc.vrg):
		// Its demotion is part of the relocation's final sync, which csi-addons proves by its
		// status at the VolumeReplication's generation; deleting it would change the generation
		// and csi-addons writes no status while deleting.
		return pending("its VolumeReplication is deleted once the relocation's final sync is recorded, and the PVC released once the storage lets it go"), nil
	case !volrep.Releasable(vr):
		return pending(fmt.Sprintf("its VolumeReplication is deleted, and the PVC released, once the storage replays the peer's primary into it "+
			"(ceph-csi releases a secondary volume only then): csi-addons reports %s", replicationConditions(vr))), nil
	default:
		if err := r.Client.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
			return replication.Result{}, fmt.Errorf("failed to delete VolumeReplication %s of deleted PVC %s: %w", klog.KObj(vr), klog.KObj(pvc), err)
		}
		return pending("waiting for the storage to release its VolumeReplication"), nil
	}
	before := pvc.DeepCopy()
	controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
	delete(pvc.Labels, LabelProtectedBy)
	delete(pvc.Labels, LabelProtectedByNamespace)
	if err := r.Client.Patch(ctx, pvc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return replication.Result{}, fmt.Errorf("failed to release deleted PVC %s: %w", klog.KObj(pvc), err)
	}
	ctrl.LoggerFrom(ctx).Info("Kept the replica of a PVC deleted on a secondary", "pvc", klog.KObj(pvc), "pv", pvc.Spec.VolumeName)
	return replication.Done(), nil
}

// pending is keepReplica's result while a deleted PVC waits for its storage: Done, since the PVC
// is demoted and the wait must not hold the group (a relocation's final sync leaves both sides
// secondary until the target is promoted, and only then does the volume replay it), with what
// it waits for as its message (DataReady reason ReleasePending); the hub holds PeerReady
// meanwhile.
func pending(msg string) replication.Result {
	res := replication.Done()
	res.Message = "it was deleted here; " + msg
	return res
}

// replicationConditions tells a VolumeReplication's state and its Completed and Resyncing
// conditions, for a person.
func replicationConditions(vr *replicationv1alpha1.VolumeReplication) string {
	out := fmt.Sprintf("state %q", vr.Status.State)
	for _, t := range []string{replicationv1alpha1.ConditionCompleted, replicationv1alpha1.ConditionResyncing} {
		if c := apimeta.FindStatusCondition(vr.Status.Conditions, t); c != nil {
			out += fmt.Sprintf(", %s %s (%s: %s)", t, c.Status, c.Reason, c.Message)
		}
	}
	return out
}

// ownVolumeReplication reports whether a VolumeReplication is the group's: labelled with it, or
// with no group at all (made by hand or by an earlier agent, and adopted).
func ownVolumeReplication(sc *scope, vr *replicationv1alpha1.VolumeReplication) bool {
	name, ns := vr.Labels[volrep.LabelVRGName], vr.Labels[volrep.LabelVRGNamespace]
	return (name == "" && ns == "") || (name == sc.vrg.Name && ns == sc.vrg.Namespace)
}

// backendOf names the backend that replicates a PVC; empty when none applies (unbound, no
// matching entry).
func (r *Reconciler) backendOf(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) (v1alpha1.ReplicationBackend, error) {
	if pvc.Spec.VolumeName == "" {
		return "", nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	className := ""
	if pvc.Spec.StorageClassName != nil {
		className = *pvc.Spec.StorageClassName
	}
	provisioner, err := r.provisioner(ctx, className, pv)
	if err != nil {
		return "", err
	}
	backend, err := r.Backends.Select(sc.vrg.Spec.StorageClassBackends, className, provisioner)
	if err != nil {
		return "", nil //nolint:nilerr // a PVC no backend replicates has no replica to keep
	}
	return backend.Name(), nil
}

// releaseKeptReplicas removes, when the group is deleted, the replicas keepReplica kept: the
// VolumeReplications of the group whose PVC is gone, being deleted or not marked by the group
// (one kept by an earlier agent, whose deletion failed, or that a secondary's demotion made),
// and the reclaim policy of the group's PVs
// whose claim is gone is restored (so a Delete policy deletes them, as it would have). It returns
// what it still waits for (the storage releasing each VolumeReplication, promoted first when the
// hub asks the group to release as primary: volrep.Backend.Release). Both are listed from the
// API server, as reconcileDelete's PVCs are.
func (r *Reconciler) releaseKeptReplicas(ctx context.Context, sc *scope) ([]replication.Result, error) {
	var waits []replication.Result
	vrs := &replicationv1alpha1.VolumeReplicationList{}
	if err := r.APIReader.List(ctx, vrs, client.MatchingLabels{volrep.LabelVRGName: sc.vrg.Name, volrep.LabelVRGNamespace: sc.vrg.Namespace}); err != nil {
		return nil, fmt.Errorf("failed to list the VolumeReplications of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	for i := range vrs.Items {
		vr := &vrs.Items[i]
		if handled, err := r.unprotectedWithItsPVC(ctx, sc, vr); err != nil || handled {
			if err != nil {
				return nil, err
			}
			continue
		}
		waits = append(waits, volrep.Release(ctx, r.Client, vr, sc.vrg.Annotations[v1alpha1.AnnotationUnprotectAsPrimary] == "true"))
	}
	done := len(waits) == 0
	pvs := &corev1.PersistentVolumeList{}
	if err := r.APIReader.List(ctx, pvs, client.MatchingLabels{LabelProtectedBy: sc.vrg.Name, LabelProtectedByNamespace: sc.vrg.Namespace}); err != nil {
		return nil, fmt.Errorf("failed to list the PVs of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.ClaimRef != nil {
			exists, err := r.claimExists(ctx, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
			if err != nil {
				return nil, err
			}
			if exists {
				continue
			}
		}
		if !done {
			// The VolumeReplications go first: a PV deleted under one would leave it failing.
			continue
		}
		if err := r.restoreReclaimPolicy(ctx, pv); err != nil {
			return nil, err
		}
	}
	return waits, nil
}

// keptReplica reports whether a PVC the application deleted holds a replica kept from this
// group's time as secondary: its VolumeReplication, the group's, is not primary (the PVC was
// deleted while the group was secondary and the storage has not released it yet). A group
// promoted since must keep that replica, not delete it with the PVC.
func (r *Reconciler) keptReplica(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	vr := &replicationv1alpha1.VolumeReplication{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(pvc), vr)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to get VolumeReplication %s: %w", klog.KObj(pvc), err)
	}
	return ownVolumeReplication(sc, vr) && vr.Spec.ReplicationState != replicationv1alpha1.Primary, nil
}

// unprotectedWithItsPVC reports whether reconcileDelete unprotects a VolumeReplication of the
// group through its PVC: the PVC exists, is not being deleted and carries the group's label. A
// secondary's demotion may have made one for a PVC the group never marked (it was never primary
// here); it goes with the kept replicas.
func (r *Reconciler) unprotectedWithItsPVC(ctx context.Context, sc *scope, vr *replicationv1alpha1.VolumeReplication) (bool, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vr.Namespace, Name: vr.Name}, pvc)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to get PVC %s/%s: %w", vr.Namespace, vr.Name, err)
	}
	return pvc.DeletionTimestamp.IsZero() && ownedBy(pvc.Labels, sc.vrg), nil
}

// claimExists reports whether a PVC exists and is not being deleted.
func (r *Reconciler) claimExists(ctx context.Context, namespace, name string) (bool, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to get PVC %s/%s: %w", namespace, name, err)
	}
	return pvc.DeletionTimestamp.IsZero(), nil
}
