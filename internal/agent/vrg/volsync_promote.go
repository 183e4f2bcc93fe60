package vrg

import (
	"context"
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// Promotion of a VolSync PVC (DESIGN.md, PVC rule 2, for storage without mirroring). The stored
// PV names a volume of the old primary's storage, which does not exist here, so it is never
// restored; the stored PVC gives the name, labels and spec, and the data comes from this
// cluster's ReplicationDestination of the PVC, always from its status.latestImage: rsync-tls
// writes the destination's volume in place, file by file (backube/volsync
// mover-rsync-tls/client.sh), so a sync cut by the peer's loss leaves that volume part old,
// part new, and only the latest image, a snapshot VolSync takes after a complete sync, is a
// consistent point. The destination is paused first (no mover, so no source writes into what
// is restored, nor replaces the image), and the image is held (volsync_image.go):
//
//   - no PVC of that name: it is created from the stored one without spec.volumeName and with
//     a dataSourceRef to the latest image, so the provisioner restores the last complete sync
//     into a new volume; no latest image is ReasonNoLatestImage (nothing was ever received,
//     nothing to restore);
//   - a PVC of that name that the destination received into (spec.rsyncTLS.destinationPVC and
//     volsync.AnnotationReceivedBy, set by receiveVolSync for a PVC kept from an earlier role):
//     VolSync's replica, which may be mixed, so it is deleted (replaceReplica says why that is
//     safe) and the next pass restores it from the latest image as above; without a latest
//     image it is ReasonNoLatestImage and left alone;
//   - any other PVC of that name: a conflict (ReasonPVCConflict), never overwritten: one that
//     differs in StorageClass, access modes or size or is bound to a volume claimed by
//     something else, or one that matches but did not receive the replication (its data is
//     older than the peer's).
//
// The destinations are removed by primaryVolSync once the restore is complete (every PVC Bound:
// the snapshot is copied, and released), and each PVC gets its ReplicationSource from the
// backend's Protect.

// AnnotationRestoredFrom marks a PVC restored from a VolSync image with the uid of the
// ReplicationDestination it was restored from, so later passes of the same promotion recognise
// it: every role of a cluster has its own destination, so a PVC left by an earlier promotion
// never carries the uid of the current one.
const AnnotationRestoredFrom = "drover.io/restored-from"

// restoreVolSyncPVC restores or adopts one stored PVC whose StorageClass selects VolSync. It
// reports whether the PVC is VolSync's (handled here); the outcome lands in sc.restore.
func (r *Reconciler) restoreVolSyncPVC(ctx context.Context, sc *scope, stored *corev1.PersistentVolumeClaim, storedPV *corev1.PersistentVolume) (bool, error) {
	vs := r.volSync()
	if vs == nil {
		return false, nil
	}
	if isVolSync, err := r.selectsVolSync(ctx, sc, stored, storedPV); err != nil || !isVolSync {
		return isVolSync, err
	}
	rs := sc.restore
	key := stored.Namespace + "/" + stored.Name
	rd, err := vs.Destination(ctx, sc.vrg, stored.Namespace, stored.Name)
	if err != nil {
		return true, err
	}
	image := volsync.LatestImage(rd)
	if rd != nil {
		if err := vs.PauseDestination(ctx, rd); err != nil {
			return true, err
		}
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(stored), pvc)
	switch {
	case apierrors.IsNotFound(err):
		return true, r.restoreFromImage(ctx, sc, stored, rd, image)
	case err != nil:
		return true, fmt.Errorf("failed to get PVC %s: %w", key, err)
	}
	restoredHere := rd != nil && pvc.Annotations[AnnotationRestoredFrom] == string(rd.UID)
	if apimeta.IsStatusConditionTrue(sc.vrg.Status.Conditions, v1alpha1.ConditionClusterDataReady) &&
		(rd == nil || restoredHere || volsync.DestinationPVC(rd) == pvc.Name) {
		// The restore of this promotion completed in an earlier generation (the hub changed the
		// spec since; a secondary resets the condition, so it is this promotion's) and the PVC
		// is the one it restored or adopted, its destination perhaps gone since: it is this
		// primary's own.
		rs.adopted++
		if pvc.Status.Phase != corev1.ClaimBound {
			return true, r.awaitRestoredPVC(ctx, sc, pvc)
		}
		return true, nil
	}
	if restoredHere {
		// Restored by an earlier pass of this promotion: counted as restored, as it was, and
		// its image released once its data is copied.
		rs.restored++
		if pvc.Status.Phase != corev1.ClaimBound {
			if gone, err := r.restoreAgainIfImageGone(ctx, pvc); gone || err != nil {
				rs.unbound = append(rs.unbound, key)
				return true, err
			}
			return true, r.awaitRestoredPVC(ctx, sc, pvc)
		}
		return true, r.releaseImage(ctx, sc.vrg, pvc.Namespace, restoredImage(pvc))
	}
	if rd != nil && volsync.DestinationPVC(rd) == pvc.Name && pvc.Annotations[volsync.AnnotationReceivedBy] == volsync.GroupKey(sc.vrg) {
		if image == nil {
			rs.conflicts[key] = restoreConflict{v1alpha1.ReasonNoLatestImage, fmt.Sprintf(
				"PVC %s is the volume of its ReplicationDestination, which has completed no sync (no status.latestImage): its data may be part of a cut sync; drover waits for a complete sync, or delete the PVC if its data is not needed",
				key)}
			return true, nil
		}
		return true, r.replaceReplica(ctx, sc, pvc, rd, image)
	}
	if msg, err := r.volSyncPVCMismatch(ctx, pvc, stored); err != nil || msg != "" {
		if msg != "" {
			rs.conflicts[key] = restoreConflict{v1alpha1.ReasonPVCConflict, msg}
		}
		return true, err
	}
	rs.conflicts[key] = restoreConflict{v1alpha1.ReasonPVCConflict, fmt.Sprintf(
		"PVC %s exists on this cluster and matches, but did not receive the replication (it is not the volume of its ReplicationDestination), so its data is older than the peer's: drover does not overwrite it; delete it (and its data) if it is not needed, and the restore creates it from the latest snapshot",
		key)}
	return true, nil
}

// restoreAgainIfImageGone deletes a PVC restored by this promotion that is not bound yet when
// the snapshot it is restored from is gone or being deleted: the provisioner would never fill
// it, and it would stay Pending with the application waiting on it. Nothing has its data (it
// has none yet), so the next pass restores it again from the destination's latest image.
func (r *Reconciler) restoreAgainIfImageGone(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	name := restoredImage(pvc)
	if name == "" || pvc.Spec.VolumeName != "" || !pvc.DeletionTimestamp.IsZero() {
		return false, nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, vs)
	switch {
	case err == nil && vs.DeletionTimestamp.IsZero():
		return false, nil
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("failed to get VolumeSnapshot %s/%s of restored PVC %s: %w", pvc.Namespace, name, pvc.Name, err)
	}
	if err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: ptr.To(pvc.UID), ResourceVersion: ptr.To(pvc.ResourceVersion)}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("failed to delete PVC %s/%s, restored from the deleted VolumeSnapshot %s: %w", pvc.Namespace, pvc.Name, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a restored PVC whose snapshot is gone, to restore it from the latest image",
		"pvc", klog.KObj(pvc), "snapshot", name)
	return true, nil
}

// selectsVolSync reports whether a stored PVC's StorageClass selects VolSync here; a class that
// selects no backend is the volrep path's to report. An error counts as VolSync's, so that the
// caller reports it.
func (r *Reconciler) selectsVolSync(ctx context.Context, sc *scope, stored *corev1.PersistentVolumeClaim, storedPV *corev1.PersistentVolume) (bool, error) {
	className := ptrString(stored.Spec.StorageClassName)
	provisioner, err := r.storedProvisioner(ctx, className, storedPV)
	if err != nil {
		return true, err
	}
	b, err := r.Backends.Select(sc.vrg.Spec.StorageClassBackends, className, provisioner)
	return err == nil && b.Name() == v1alpha1.BackendVolSync, nil
}

// restoreFromImage creates a stored PVC that is not on this cluster from the latest image of its
// ReplicationDestination, marked with the destination's uid; without an image it is a conflict.
func (r *Reconciler) restoreFromImage(ctx context.Context, sc *scope, stored *corev1.PersistentVolumeClaim,
	rd *volsyncv1alpha1.ReplicationDestination, image *corev1.TypedLocalObjectReference) error {
	rs := sc.restore
	key := stored.Namespace + "/" + stored.Name
	if image == nil {
		rs.conflicts[key] = restoreConflict{v1alpha1.ReasonNoLatestImage, noImageMessage(key, rd)}
		return nil
	}
	if err := r.holdImage(ctx, sc.vrg, stored.Namespace, image.Name); err != nil {
		return err
	}
	pvc := restoredVolSyncPVC(stored, image.Name)
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, AnnotationRestoredFrom, string(rd.UID))
	if err := r.Client.Create(ctx, pvc, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to restore PVC %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).Info("Restored PVC from the latest VolSync image", "pvc", klog.KObj(pvc), "snapshot", image.Name)
	rs.restored++
	rs.unbound = append(rs.unbound, key)
	return nil
}

// storedProvisioner is the provisioner of a stored PVC's class here, or its stored PV's driver.
func (r *Reconciler) storedProvisioner(ctx context.Context, className string, storedPV *corev1.PersistentVolume) (string, error) {
	if storedPV == nil {
		storedPV = &corev1.PersistentVolume{}
	}
	return r.provisioner(ctx, className, storedPV)
}

func noImageMessage(key string, rd *volsyncv1alpha1.ReplicationDestination) string {
	if rd == nil {
		return fmt.Sprintf("PVC %s cannot be restored: this cluster has no ReplicationDestination for it, so it never received the PVC's data; check that spec.volSync.receivePVCs listed it while this cluster was secondary", key)
	}
	return fmt.Sprintf("PVC %s cannot be restored: its ReplicationDestination on this cluster has not received a sync yet (no status.latestImage); nothing of its data is here", key)
}

// restoredVolSyncPVC is the PVC to create from its stored form: the same name, labels and spec,
// no volume, and the snapshot as its data source.
func restoredVolSyncPVC(stored *corev1.PersistentVolumeClaim, snapshot string) *corev1.PersistentVolumeClaim {
	pvc := stored.DeepCopy()
	pvc.TypeMeta = metav1.TypeMeta{}
	pvc.Status = corev1.PersistentVolumeClaimStatus{}
	pvc.Spec.VolumeName = ""
	pvc.Spec.DataSource = nil
	pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: snapshot}
	for k := range pvc.Annotations {
		if strings.HasPrefix(k, "pv.kubernetes.io/") || strings.HasPrefix(k, "volume.kubernetes.io/") || strings.HasPrefix(k, "volume.beta.kubernetes.io/") {
			delete(pvc.Annotations, k)
		}
	}
	return pvc
}

// volSyncPVCMismatch says how an existing PVC differs from the stored one in what makes it the
// same claim for VolSync (StorageClass, access modes, requested size), or that it is bound to a
// PV claimed by another PVC; "" when it matches.
func (r *Reconciler) volSyncPVCMismatch(ctx context.Context, existing, stored *corev1.PersistentVolumeClaim) (string, error) {
	key := existing.Namespace + "/" + existing.Name
	rp := v1alpha1.VolSyncReceivePVC{
		StorageClassName: ptrString(stored.Spec.StorageClassName), AccessModes: stored.Spec.AccessModes,
		Capacity: stored.Spec.Resources.Requests[corev1.ResourceStorage], VolumeMode: stored.Spec.VolumeMode,
	}
	diffs := receiveMismatch(existing, rp)
	if existing.Spec.VolumeName != "" {
		pv := &corev1.PersistentVolume{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: existing.Spec.VolumeName}, pv)
		switch {
		case err == nil:
			if ref := pv.Spec.ClaimRef; ref != nil && (ref.Namespace != existing.Namespace || ref.Name != existing.Name || (ref.UID != "" && ref.UID != existing.UID)) {
				diffs = strings.Trim(diffs+fmt.Sprintf(", PV %s claimed by %s/%s", pv.Name, ref.Namespace, ref.Name), ", ")
			}
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("failed to get PV %s of PVC %s: %w", existing.Spec.VolumeName, key, err)
		}
	}
	if diffs == "" {
		return "", nil
	}
	return fmt.Sprintf("PVC %s exists on this cluster with %s: drover does not overwrite it; delete or rename it if it is not needed, and the restore continues", key, diffs), nil
}
