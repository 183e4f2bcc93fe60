package csi

// Pre-provisioned snapshots
//
// A VolumeSnapshotContent made by hand with spec.source.snapshotHandle names a snapshot the
// storage already holds; a VolumeSnapshot whose spec.source.volumeSnapshotContentName names that
// content binds to it. That is how a snapshot of one namespace is used in another (a PVC's
// dataSource cannot name a snapshot of another namespace): a second content with the same handle,
// deletionPolicy Retain, and a snapshot bound to it where the PVC is. The lab models both halves
// of kubernetes-csi/external-snapshotter:
//   - the CSI snapshotter sidecar (pkg/sidecar-controller/snapshot_controller.go, the content's
//     status of a pre-provisioned handle read from the driver's ListSnapshots): the content's
//     status gets snapshotHandle, readyToUse, restoreSize and creationTime when the handle's data
//     exists, an error saying so when it does not;
//   - snapshot-controller (pkg/common-controller/snapshot_controller.go, the pre-provisioned path
//     of syncUnreadySnapshot: the content must exist and its volumeSnapshotRef must name this
//     snapshot, by namespace and name, and by uid once bound): the content's ref gains the
//     snapshot's uid and the snapshot's status names the content, ready as the content is.
// A content whose ref names another snapshot is refused with an error in the snapshot's status,
// as upstream does. Deleting such a snapshot leaves its content (Retain), whose deletion leaves
// the data, which the snapshot that took it owns.

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// bindStaticSnapshot binds a snapshot to the pre-provisioned content it names.
func (s *store) bindStaticSnapshot(ctx context.Context, vs *snapshotv1.VolumeSnapshot) (ctrl.Result, error) {
	name := *vs.Spec.Source.VolumeSnapshotContentName
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, content); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: snapshotRetry}, s.failSnapshot(ctx, vs, fmt.Sprintf("VolumeSnapshotContent %s does not exist", name))
		}
		return ctrl.Result{}, err
	}
	if !s.Ours(content.Spec.Driver) || content.Spec.Source.SnapshotHandle == nil {
		return ctrl.Result{}, nil // another storage's, or a dynamic content named by hand
	}
	ref := content.Spec.VolumeSnapshotRef
	if ref.Namespace != vs.Namespace || ref.Name != vs.Name || (ref.UID != "" && ref.UID != vs.UID) {
		return ctrl.Result{}, s.failSnapshot(ctx, vs, fmt.Sprintf(
			"VolumeSnapshotContent %s is bound to snapshot %s/%s: make a content whose volumeSnapshotRef names this snapshot", name, ref.Namespace, ref.Name))
	}
	ready, err := s.readStaticContent(ctx, content)
	if err != nil || !ready {
		return ctrl.Result{RequeueAfter: snapshotRetry}, err
	}
	if ref.UID == "" {
		patch := client.MergeFrom(content.DeepCopy())
		content.Spec.VolumeSnapshotRef.UID = vs.UID
		if err := s.Client.Patch(ctx, content, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to bind VolumeSnapshotContent %s: %w", name, err)
		}
	}
	patch := client.MergeFrom(vs.DeepCopy())
	vs.Status = &snapshotv1.VolumeSnapshotStatus{
		BoundVolumeSnapshotContentName: ptr.To(name),
		CreationTime:                   ptr.To(metav1.Unix(0, ptr.Deref(content.Status.CreationTime, 0))),
		ReadyToUse:                     ptr.To(true),
		RestoreSize:                    resource.NewQuantity(ptr.Deref(content.Status.RestoreSize, 0), resource.BinarySI),
	}
	if err := s.Client.Status().Patch(ctx, vs, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to patch status of snapshot %s: %w", klog.KObj(vs), err)
	}
	ctrl.LoggerFrom(ctx).Info("Bound pre-provisioned snapshot", "snapshot", klog.KObj(vs), "content", name)
	return ctrl.Result{}, nil
}

// readStaticContent fills a pre-provisioned content's status from the data of its handle, as
// the sidecar fills it from the driver; ready is false when the handle holds no data.
func (s *store) readStaticContent(ctx context.Context, content *snapshotv1.VolumeSnapshotContent) (bool, error) {
	if content.Status != nil && ptr.Deref(content.Status.ReadyToUse, false) {
		return true, nil
	}
	handle := *content.Spec.Source.SnapshotHandle
	patch := client.MergeFrom(content.DeepCopy())
	ok, err := driver.Exists(state.SnapshotPath(s.Opts.DataDir, handle))
	if err != nil {
		return false, err
	}
	if !ok {
		content.Status = &snapshotv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(false), Error: &snapshotv1.VolumeSnapshotError{
			Time: ptr.To(metav1.Now()), Message: ptr.To(fmt.Sprintf("snapshot %s does not exist in driver %s", handle, content.Spec.Driver)),
		}}
	} else {
		size, err := s.sizeOfSnapshot(ctx, handle)
		if err != nil {
			return false, err
		}
		content.Status = &snapshotv1.VolumeSnapshotContentStatus{
			SnapshotHandle: ptr.To(handle), ReadyToUse: ptr.To(true), RestoreSize: ptr.To(size), CreationTime: ptr.To(metav1.Now().UnixNano()),
		}
	}
	if err := s.Client.Status().Patch(ctx, content, patch); err != nil {
		return false, fmt.Errorf("failed to patch status of VolumeSnapshotContent %s: %w", content.Name, err)
	}
	return ok, nil
}

// sizeOfSnapshot is the restore size the storage knows for a handle: that of a dynamic content
// with the same handle (the snapshot that took it), else 0 (unknown, as a driver may say).
func (s *store) sizeOfSnapshot(ctx context.Context, handle string) (int64, error) {
	list := &snapshotv1.VolumeSnapshotContentList{}
	if err := s.Client.List(ctx, list); err != nil {
		return 0, fmt.Errorf("failed to list VolumeSnapshotContents: %w", err)
	}
	for _, c := range list.Items {
		if c.Spec.Source.VolumeHandle != nil && c.Status != nil && ptr.Deref(c.Status.SnapshotHandle, "") == handle {
			return ptr.Deref(c.Status.RestoreSize, 0), nil
		}
	}
	return 0, nil
}

// A mirrored secondary image cannot be copied. ceph-csi (internal/rbd/controllerserver.go,
// CreateSnapshot then doSnapshotClone; internal/rbd/rbd_util.go, createSnapshot) takes a
// snapshot or a clone through `rbd snap create` on the image itself, with no check of its
// mirroring role, and librbd refuses it on a non-primary image (read-only); a PV of it is not
// even staged (rbd_util.go, isInUse: "cannot map image ... it is not primary"). The lab refuses a
// snapshot of a secondary image the same way, with the error in the snapshot's status: a drill
// of a VolumeReplication application cannot copy its data on the secondary.

// secondaryImageRefusal is the snapshot error for a volume whose image is a mirrored secondary,
// "" for one that may be snapshotted.
func (s *store) secondaryImageRefusal(handle string) string {
	st, err := s.Images.State(handle)
	if err != nil || st.Role != state.RoleSecondary {
		return ""
	}
	return fmt.Sprintf("failed to create snapshot: image %s is not primary (a mirrored secondary is read-only): promote it, or snapshot it on its primary", handle)
}
