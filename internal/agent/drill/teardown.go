package drill

import (
	"context"
	"errors"
	"fmt"
	"slices"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// teardown removes everything the sandbox made, found by its labels and annotations rather than
// its status (a crash may have made something the status never recorded): the sandbox
// namespaces, and everything in them, until they are gone; the pre-provisioned snapshot
// contents; the holds on the VolSync images. Then the finalizer goes.
func (r *Reconciler) teardown(ctx context.Context, sb *v1alpha1.DrillSandbox) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return ctrl.Result{}, nil
	}
	remaining, err := r.deleteNamespaces(ctx, sb)
	if err != nil || remaining > 0 {
		return ctrl.Result{RequeueAfter: requeueWaiting}, err
	}
	if err := r.deleteContents(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.releaseImages(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(sb.DeepCopy())
	controllerutil.RemoveFinalizer(sb, Finalizer)
	if err := r.Client.Patch(ctx, sb, patch, client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("failed to remove the finalizer of DrillSandbox %s: %w", klog.KObj(sb), err)
	}
	ctrl.LoggerFrom(ctx).Info("Tore the drill's sandbox down", "sandbox", klog.KObj(sb))
	return ctrl.Result{}, nil
}

// deleteNamespaces deletes the sandbox's namespaces and returns how many still exist.
func (r *Reconciler) deleteNamespaces(ctx context.Context, sb *v1alpha1.DrillSandbox) (int, error) {
	list := &corev1.NamespaceList{}
	if err := r.APIReader.List(ctx, list, client.MatchingLabels{LabelDrill: sb.Spec.DrillID}); err != nil {
		return 0, fmt.Errorf("failed to list the namespaces of drill %s: %w", sb.Spec.DrillID, err)
	}
	remaining := 0
	for i := range list.Items {
		ns := &list.Items[i]
		if ns.Annotations[AnnotationSandbox] != sandboxKey(sb) {
			continue
		}
		remaining++
		if ns.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: ptr.To(ns.UID)}); client.IgnoreNotFound(err) != nil {
			return remaining, fmt.Errorf("failed to delete the sandbox namespace %s: %w", ns.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted the sandbox namespace", "namespace", ns.Name)
	}
	return remaining, nil
}

// deleteContents deletes the pre-provisioned snapshot contents (Retain: the data stays with the
// image that took it).
func (r *Reconciler) deleteContents(ctx context.Context, sb *v1alpha1.DrillSandbox) error {
	list := &snapshotv1.VolumeSnapshotContentList{}
	if err := r.APIReader.List(ctx, list, client.MatchingLabels{LabelDrill: sb.Spec.DrillID}); err != nil {
		return fmt.Errorf("failed to list the snapshot contents of drill %s: %w", sb.Spec.DrillID, err)
	}
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		if c.Annotations[AnnotationSandbox] != sandboxKey(sb) {
			continue
		}
		if err := r.Client.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete VolumeSnapshotContent %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// releaseImages removes the drill's holds on VolSync images in the protected namespaces. An
// image VolSync gave up (no owner left) that is no longer a destination's latest is deleted:
// nothing else would; the latest image is VolSync's to clean up after the next sync.
func (r *Reconciler) releaseImages(ctx context.Context, sb *v1alpha1.DrillSandbox) error {
	var errs []error
	for _, ns := range r.heldNamespaces(ctx, sb) {
		list := &snapshotv1.VolumeSnapshotList{}
		if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.HasLabels{doNotDelete}); err != nil {
			errs = append(errs, fmt.Errorf("failed to list the snapshots of %s: %w", ns, err))
			continue
		}
		latest, err := r.latestImages(ctx, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range list.Items {
			if err := r.releaseImage(ctx, sb, &list.Items[i], latest); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// releaseImage releases one image if the drill holds it.
func (r *Reconciler) releaseImage(ctx context.Context, sb *v1alpha1.DrillSandbox, vs *snapshotv1.VolumeSnapshot, latest []string) error {
	if vs.Annotations[vrg.AnnotationHeldBy] != holder(sb) {
		return nil
	}
	if len(vs.OwnerReferences) == 0 && !slices.Contains(latest, vs.Name) {
		err := r.Client.Delete(ctx, vs, client.Preconditions{ResourceVersion: ptr.To(vs.ResourceVersion)})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete the released VolumeSnapshot %s: %w", klog.KObj(vs), err)
		}
		return nil
	}
	before := vs.DeepCopy()
	delete(vs.Labels, doNotDelete)
	delete(vs.Annotations, vrg.AnnotationHeldBy)
	err := r.Client.Patch(ctx, vs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to release VolumeSnapshot %s: %w", klog.KObj(vs), err)
	}
	ctrl.LoggerFrom(ctx).Info("Released the VolSync image held for the drill", "snapshot", klog.KObj(vs))
	return nil
}

// latestImages are the latest images of the destinations of a namespace.
func (r *Reconciler) latestImages(ctx context.Context, ns string) ([]string, error) {
	list := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("failed to list the ReplicationDestinations of %s: %w", ns, err)
	}
	var names []string
	for i := range list.Items {
		if image := volsync.LatestImage(&list.Items[i]); image != nil {
			names = append(names, image.Name)
		}
	}
	return names, nil
}

// heldNamespaces are where the drill may hold images: the protected namespaces of the group (if
// it still exists) and those the status names.
func (r *Reconciler) heldNamespaces(ctx context.Context, sb *v1alpha1.DrillSandbox) []string {
	out := []string{sb.Namespace}
	group := &v1alpha1.VolumeReplicationGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Spec.VRGName}, group); err == nil {
		out = append(out, vrg.ProtectedNamespaces(group)...)
	}
	for _, n := range sb.Status.Namespaces {
		out = append(out, n.Source)
	}
	for _, v := range sb.Status.Volumes {
		out = append(out, v.PVCNamespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
