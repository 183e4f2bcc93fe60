package vrg

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// Classes that bind on the first consumer. A StorageClass with volumeBindingMode
// WaitForFirstConsumer (the default classes of EBS, GCE PD and Azure Disk) leaves a new PVC
// Pending until the scheduler places a pod that uses it: only then does the provisioner create
// its volume, restoring a dataSourceRef's snapshot then (kube-scheduler's VolumeBinding plugin
// sets volume.kubernetes.io/selected-node; the PV controller and external-provisioner wait for
// it). A VolSync restore creates such a PVC from the destination's latest image, and the
// application's pods are its first consumers; a promotion that waited for it to be Bound before
// ClusterDataReady would never see it bound, since the hub places the application only after.
//
// What "restored" means for such a PVC: it exists, Pending and bound to nothing, with its
// dataSourceRef naming the image the restore chose, and that image is held (labelled
// volsync.backube/do-not-delete by this group, volsync_image.go), ready and not being deleted.
// dataSourceRef cannot change, so the PVC can only ever bind to a volume the provisioner restores
// from that image; the hold keeps VolSync's cleanup from deleting the image before the first pod
// comes. That is the promise the restore makes before the application is placed, and the most a
// cluster can give without a consumer: the copy itself happens when the pod is scheduled. The
// hold is released, and the group's ReplicationDestinations (paused, keeping the image theirs
// to VolSync) removed, once the PVC is Bound. Until then its DataReady is True (the PVC is
// primary and writable: the application may start) and its DataProtected False (nothing
// replicates a volume that does not exist yet).

// bindsOnFirstConsumer reports whether a StorageClass binds its PVCs on their first consumer. A
// class that does not exist (deleted since) binds nothing: false.
func (r *Reconciler) bindsOnFirstConsumer(ctx context.Context, className string) (bool, error) {
	if className == "" {
		return false, nil
	}
	class := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: className}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to get StorageClass %s: %w", className, err)
	}
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// unboundResult is the protection result of a PVC that is not Bound: a PVC of a class that binds
// on its first consumer is primary and writable already (a pod using it makes it Bound), so it
// does not hold DataReady; any other is waited for.
func (r *Reconciler) unboundResult(ctx context.Context, ps *pvcState) (replication.Result, error) {
	res := replication.Retry(requeueWaitingForStorage, v1alpha1.ReasonPVCNotBound, fmt.Sprintf(
		"PVC %s is not Bound yet (phase %s); drover protects it once it is", ps.key(), ps.pvc.Status.Phase))
	wffc, err := r.bindsOnFirstConsumer(ctx, ps.storageClass)
	if err != nil || !wffc {
		return res, err
	}
	res.Message = fmt.Sprintf(
		"PVC %s waits for its first consumer (StorageClass %s binds WaitForFirstConsumer): it is Bound, and drover protects it, once a pod that uses it is scheduled",
		ps.key(), ps.storageClass)
	res.Writable = true
	return res, nil
}

// awaitRestoredPVC records a PVC restored from a VolSync image that is not Bound yet: waited
// for (unbound) in an ordinary class; restored, as far as a cluster can tell before its first
// consumer, in a class that binds on it, when its image is held for it (heldForConsumer);
// a conflict when that image is gone or going.
func (r *Reconciler) awaitRestoredPVC(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) error {
	key := pvc.Namespace + "/" + pvc.Name
	wffc, err := r.bindsOnFirstConsumer(ctx, ptrString(pvc.Spec.StorageClassName))
	if err != nil {
		return err
	}
	if !wffc || pvc.Spec.VolumeName != "" {
		sc.restore.unbound = append(sc.restore.unbound, key)
		return nil
	}
	msg, err := r.heldForConsumer(ctx, sc.vrg, pvc)
	if err != nil {
		return err
	}
	if msg != "" {
		sc.restore.conflicts[key] = restoreConflict{v1alpha1.ReasonNoLatestImage, msg}
		return nil
	}
	sc.restore.awaitingConsumer = append(sc.restore.awaitingConsumer, key)
	return nil
}

// heldForConsumer makes sure the image a Pending restored PVC names stays until the PVC is
// Bound: it exists, is ready and not being deleted, and is held (labelled do-not-delete; labelled
// again if someone removed the label). It returns what is wrong when the PVC can no longer be
// restored; "" when it is held.
func (r *Reconciler) heldForConsumer(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, pvc *corev1.PersistentVolumeClaim) (string, error) {
	key := pvc.Namespace + "/" + pvc.Name
	name := restoredImage(pvc)
	if name == "" {
		return fmt.Sprintf("PVC %s was restored by drover but names no VolumeSnapshot as its data source: delete it, and the restore creates it again from the latest image", key), nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, vs)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && !vs.DeletionTimestamp.IsZero()):
		return fmt.Sprintf(
			"PVC %s waits for its first consumer to be restored from VolumeSnapshot %s, which is gone or being deleted, so it can never be restored: delete the PVC, and the restore creates it again from its destination's latest image",
			key, name), nil
	case err != nil:
		return "", fmt.Errorf("failed to get VolumeSnapshot %s/%s of PVC %s: %w", pvc.Namespace, name, key, err)
	case vs.Status == nil || vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse:
		return fmt.Sprintf("PVC %s waits for VolumeSnapshot %s, its data source, to be ready", key, name), nil
	}
	if _, held := vs.Labels[volSyncDoNotDelete]; held {
		return "", nil
	}
	return "", r.holdImage(ctx, vrg, pvc.Namespace, name)
}

// releaseConsumedImages releases, once a primary's restore is complete, the images held for
// its restored PVCs that waited for their first consumer, as each PVC becomes Bound. It reports
// whether some PVC still waits with its image held: the group's ReplicationDestinations stay
// until none does.
func (r *Reconciler) releaseConsumedImages(ctx context.Context, sc *scope) (bool, error) {
	waiting := false
	for _, ns := range protectedNamespaces(sc.vrg) {
		pvcs := &corev1.PersistentVolumeClaimList{}
		if err := r.Client.List(ctx, pvcs, client.InNamespace(ns)); err != nil {
			return false, fmt.Errorf("failed to list the PVCs of namespace %s: %w", ns, err)
		}
		for i := range pvcs.Items {
			pvc := &pvcs.Items[i]
			image := restoredImage(pvc)
			if _, restored := pvc.Annotations[AnnotationRestoredFrom]; !restored || image == "" || !pvc.DeletionTimestamp.IsZero() {
				continue
			}
			if pvc.Status.Phase == corev1.ClaimBound {
				if err := r.releaseImage(ctx, sc.vrg, pvc.Namespace, image); err != nil {
					return false, err
				}
				continue
			}
			held, err := r.heldBy(ctx, sc.vrg, pvc.Namespace, image)
			if err != nil {
				return false, err
			}
			waiting = waiting || held
		}
	}
	return waiting, nil
}

// heldBy reports whether the group holds a snapshot (volsync_image.go's AnnotationHeldBy).
func (r *Reconciler) heldBy(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) (bool, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vs); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return vs.Annotations[AnnotationHeldBy] == volsync.GroupKey(vrg), nil
}
