package vrg

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
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
// label are removed.
func (r *Reconciler) keepReplica(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	vr := &replicationv1alpha1.VolumeReplication{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(pvc), vr)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("failed to get VolumeReplication %s: %w", klog.KObj(pvc), err)
	case vr.DeletionTimestamp.IsZero() && ownVolumeReplication(sc, vr):
		if err := r.Client.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("failed to delete VolumeReplication %s of deleted PVC %s: %w", klog.KObj(vr), klog.KObj(pvc), err)
		}
	}
	before := pvc.DeepCopy()
	controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
	delete(pvc.Labels, LabelProtectedBy)
	delete(pvc.Labels, LabelProtectedByNamespace)
	if err := r.Client.Patch(ctx, pvc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("failed to release deleted PVC %s: %w", klog.KObj(pvc), err)
	}
	ctrl.LoggerFrom(ctx).Info("Kept the replica of a PVC deleted on a secondary", "pvc", klog.KObj(pvc), "pv", pvc.Spec.VolumeName)
	return true, nil
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
// VolumeReplications of the group whose PVC is gone or being deleted (one kept by an earlier
// agent, or whose deletion failed), and the reclaim policy of the group's PVs
// whose claim is gone is restored (so a Delete policy deletes them, as it would have). It reports
// whether nothing is left. Both are listed from the API server, as reconcileDelete's PVCs are.
func (r *Reconciler) releaseKeptReplicas(ctx context.Context, sc *scope) (bool, error) {
	done := true
	vrs := &replicationv1alpha1.VolumeReplicationList{}
	if err := r.APIReader.List(ctx, vrs, client.MatchingLabels{volrep.LabelVRGName: sc.vrg.Name, volrep.LabelVRGNamespace: sc.vrg.Namespace}); err != nil {
		return false, fmt.Errorf("failed to list the VolumeReplications of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	for i := range vrs.Items {
		vr := &vrs.Items[i]
		if exists, err := r.claimExists(ctx, vr.Namespace, vr.Name); err != nil || exists {
			if err != nil {
				return false, err
			}
			continue
		}
		done = false
		if vr.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("failed to delete VolumeReplication %s: %w", klog.KObj(vr), err)
			}
		}
	}
	pvs := &corev1.PersistentVolumeList{}
	if err := r.APIReader.List(ctx, pvs, client.MatchingLabels{LabelProtectedBy: sc.vrg.Name, LabelProtectedByNamespace: sc.vrg.Namespace}); err != nil {
		return false, fmt.Errorf("failed to list the PVs of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.ClaimRef != nil {
			exists, err := r.claimExists(ctx, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
			if err != nil {
				return false, err
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
			return false, err
		}
	}
	return done, nil
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
