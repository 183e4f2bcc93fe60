package vrg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// The image a promotion restores from, held (backube/volsync internal/controller/utils/
// cleanup.go): after every completed sync VolSync deletes the previous latest image, unless the
// snapshot is labelled volsync.backube/do-not-delete, and it gives up its ownership of a
// snapshot so labelled at once. A restore from an image that a sync completing meanwhile (the
// peer returning) deleted would fail half-way, so the image is labelled before the restored PVC
// is created and released once the PVC is Bound (its data copied). Released, the snapshot is
// VolSync's to clean up again, except that VolSync has given it up: nothing would delete it, and
// its destination goes once the restore is complete, so drover deletes it.

const (
	// volSyncDoNotDelete is VolSync's label that keeps a snapshot from its cleanup.
	volSyncDoNotDelete = "volsync.backube/do-not-delete"
	// AnnotationHeldBy on a VolumeSnapshot names the group (<namespace>/<name>) that labelled
	// it do-not-delete for a restore: drover releases only its own holds, never a label
	// someone else set.
	AnnotationHeldBy = "drover.io/held-by"
)

// holdImage labels the snapshot do-not-delete for the group, unless it carries the label already.
// It refuses a snapshot that is being deleted (VolSync deletes the previous image once a newer
// sync's is recorded): a PVC restored from it would never bind. The label is set with an
// optimistic lock and VolSync deletes an image with a resourceVersion precondition
// (backube/volsync internal/controller/utils/cleanup.go, CleanupSnapshotsWithLabelCheck), so
// once held, the snapshot stays. A conflict (the snapshot controller writing a new image's
// status, VolSync giving it up) reads the snapshot again and tries again, deletion included.
func (r *Reconciler) holdImage(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) error {
	held := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vs := &snapshotv1.VolumeSnapshot{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vs); err != nil {
			return fmt.Errorf("failed to get VolumeSnapshot %s/%s: %w", namespace, name, err)
		}
		if !vs.DeletionTimestamp.IsZero() {
			return fmt.Errorf("%w: VolumeSnapshot %s/%s is being deleted (VolSync replaced it by a newer sync's image); the restore reads its ReplicationDestination again",
				errImageDeleted, namespace, name)
		}
		if _, ok := vs.Labels[volSyncDoNotDelete]; ok {
			return nil
		}
		before := vs.DeepCopy()
		metav1.SetMetaDataLabel(&vs.ObjectMeta, volSyncDoNotDelete, "true")
		metav1.SetMetaDataAnnotation(&vs.ObjectMeta, AnnotationHeldBy, volsync.GroupKey(vrg))
		if err := r.Client.Patch(ctx, vs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to label VolumeSnapshot %s/%s %s: %w", namespace, name, volSyncDoNotDelete, err)
		}
		held = true
		return nil
	})
	if err != nil {
		return err
	}
	if held {
		ctrl.LoggerFrom(ctx).Info("Held the VolSync image of a restore", "snapshot", klog.KRef(namespace, name))
	}
	return nil
}

// releaseImage removes the group's hold on a snapshot once the PVC restored from it is Bound,
// and deletes the snapshot if VolSync gave it up meanwhile.
func (r *Reconciler) releaseImage(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) error {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vs); err != nil {
		return client.IgnoreNotFound(err)
	}
	if vs.Annotations[AnnotationHeldBy] != volsync.GroupKey(vrg) {
		return nil
	}
	if len(vs.OwnerReferences) == 0 {
		if err := r.Client.Delete(ctx, vs, client.Preconditions{ResourceVersion: ptr.To(vs.ResourceVersion)}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete the released VolumeSnapshot %s/%s: %w", namespace, name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted the VolSync image of a completed restore", "snapshot", klog.KObj(vs))
		return nil
	}
	before := vs.DeepCopy()
	delete(vs.Labels, volSyncDoNotDelete)
	delete(vs.Annotations, AnnotationHeldBy)
	if err := r.Client.Patch(ctx, vs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to release VolumeSnapshot %s/%s: %w", namespace, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Released the VolSync image of a completed restore", "snapshot", klog.KObj(vs))
	return nil
}

// errImageDeleted: the latest image a restore would use is being deleted.
var errImageDeleted = errors.New("the latest image is being deleted")

// restoredImage is the snapshot a restored PVC names as its data source, or "".
func restoredImage(pvc *corev1.PersistentVolumeClaim) string {
	if ref := pvc.Spec.DataSourceRef; ref != nil && ref.Kind == "VolumeSnapshot" && ptr.Deref(ref.APIGroup, "") == snapshotv1.GroupName {
		return ref.Name
	}
	return ""
}

// replaceReplica deletes a PVC kept from an earlier role that the group's destination received
// into, so that the next pass restores it from the latest image (image, held first).
//
// Why deleting it is safe: AnnotationReceivedBy says that this group made it its destination's
// volume while nothing used it, so what it holds since is VolSync's copy of the peer's data, not
// the application's (the writes this cluster made as primary were given up at the failover, as
// PVC rule 1 says), and that copy is in the latest image. Why it must go: rsync-tls writes a
// destination's volume in place, so one that a cut sync left part old, part new cannot be told
// from a complete one. What protects PVCs that are not drover's: a PVC without the mark, or
// another group's, or one its destination does not name, or one in use, is never deleted: it is
// a conflict, reported as such.
func (r *Reconciler) replaceReplica(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim,
	rd *volsyncv1alpha1.ReplicationDestination, image *corev1.TypedLocalObjectReference) error {
	rs := sc.restore
	key := pvc.Namespace + "/" + pvc.Name
	if pvc.DeletionTimestamp.IsZero() {
		users, err := r.consumers(ctx, pvc, true)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			rs.conflicts[key] = restoreConflict{v1alpha1.ReasonPVCConflict, fmt.Sprintf(
				"PVC %s holds this cluster's VolSync replica, which drover replaces by a PVC restored from the latest image, but it is in use by %s: stop what uses it, and the restore continues",
				key, strings.Join(users, ", "))}
			return nil
		}
		if err := r.holdImage(ctx, sc.vrg, pvc.Namespace, image.Name); err != nil {
			return err
		}
	}
	if err := r.releaseReplica(ctx, pvc); err != nil {
		if apierrors.IsConflict(err) {
			// The cache was behind (an earlier pass released it): look again shortly.
			rs.unbound = append(rs.unbound, key)
			return nil
		}
		return err
	}
	if pvc.DeletionTimestamp.IsZero() {
		err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: ptr.To(pvc.UID)})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("failed to delete the VolSync replica PVC %s: %w", key, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted the VolSync replica PVC, to restore it from the latest image",
			"pvc", klog.KObj(pvc), "destination", klog.KObj(rd), "snapshot", image.Name)
	}
	rs.unbound = append(rs.unbound, key)
	return nil
}

// releaseReplica takes drover's finalizer off a replica PVC and gives its PV back its original
// reclaim policy, so the replica's volume goes as its StorageClass says.
func (r *Reconciler) releaseReplica(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeName != "" {
		pv := &corev1.PersistentVolume{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)
		switch {
		case err == nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == pvc.UID:
			if err := r.restoreReclaimPolicy(ctx, pv); err != nil {
				return err
			}
		case client.IgnoreNotFound(err) != nil:
			return fmt.Errorf("failed to get PV %s of PVC %s/%s: %w", pvc.Spec.VolumeName, pvc.Namespace, pvc.Name, err)
		}
	}
	if !controllerutil.ContainsFinalizer(pvc, PVCFinalizer) {
		return nil
	}
	before := pvc.DeepCopy()
	controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
	delete(pvc.Labels, LabelProtectedBy)
	delete(pvc.Labels, LabelProtectedByNamespace)
	if err := r.Client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to release the VolSync replica PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}
