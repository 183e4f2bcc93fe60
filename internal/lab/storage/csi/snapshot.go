package csi

// Snapshots in the lab
//
// The lab storage plays snapshot-controller and the CSI snapshotter for its drivers, with real
// VolumeSnapshot objects (snapshot.storage.k8s.io/v1):
//   - A VolumeSnapshot of a bound lab PVC (spec.source.persistentVolumeClaimName) gets the
//     finalizer lab.drover.io/snapshot, then a crash-consistent copy of the volume (CopyVolume:
//     under Images.Lock, the pods using it stopped) into
//     <dataDir>/snapshots/snapshot-<vs uid>/ (staged, renamed into place), a
//     VolumeSnapshotContent snapcontent-<vs uid> (driver, source.volumeHandle, deletionPolicy,
//     volumeSnapshotRef; status snapshotHandle, readyToUse, restoreSize = the PV's capacity),
//     and the snapshot's status (boundVolumeSnapshotContentName, readyToUse, restoreSize,
//     creationTime), the shape snapshot-controller gives a dynamically provisioned snapshot.
//     spec.volumeSnapshotClassName, when set, must name a class of the volume's driver, whose
//     deletionPolicy the content takes; unset, the policy is Delete (the lab installs no class).
//   - Deleting such a snapshot removes its data and its content when the policy is Delete (the
//     content stays with Retain), then the finalizer.
//   - A PVC of a lab storage class whose dataSourceRef (or dataSource) names a VolumeSnapshot
//     is provisioned only once the snapshot is readyToUse, with the snapshot's data copied into
//     the new volume before its PV exists (populate, called by provision).
//
// Pre-provisioned snapshots (a VolumeSnapshot naming an existing content) are in
// snapshot_static.go. Not modelled: group snapshots, cross-namespace data sources.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

const (
	// snapshotFinalizer holds a lab snapshot until its data and content are removed.
	snapshotFinalizer = "lab.drover.io/snapshot"
	// snapshotRetry is how soon a snapshot, or a PVC waiting for one, is looked at again.
	snapshotRetry = time.Second
)

// SetupSnapshots registers the snapshotter with the manager.
func SetupSnapshots(mgr ctrl.Manager, d *driver.Store) error {
	s := &store{Store: d}
	// Staging holds half-made copies; nothing runs yet, so whatever is there was torn by a stop.
	if err := os.RemoveAll(filepath.Join(s.Opts.DataDir, "staging")); err != nil {
		return fmt.Errorf("failed to empty the staging directory: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("lab-snapshotter").
		For(&snapshotv1.VolumeSnapshot{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: driver.Workers}).
		Complete(driver.ReconcilerFunc(s.reconcileSnapshot))
}

func snapshotReady(vs *snapshotv1.VolumeSnapshot) bool {
	return vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false) && vs.Status.BoundVolumeSnapshotContentName != nil
}

func contentName(vs *snapshotv1.VolumeSnapshot) string {
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		return *vs.Status.BoundVolumeSnapshotContentName
	}
	return "snapcontent-" + string(vs.UID)
}

// reconcileSnapshot takes a snapshot of a lab PVC, or removes a deleted one.
func (s *store) reconcileSnapshot(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := s.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vs.DeletionTimestamp != nil {
		return ctrl.Result{}, s.deleteSnapshot(ctx, vs)
	}
	if snapshotReady(vs) {
		return ctrl.Result{}, nil
	}
	if vs.Spec.Source.VolumeSnapshotContentName != nil {
		return s.bindStaticSnapshot(ctx, vs)
	}
	if vs.Spec.Source.PersistentVolumeClaimName == nil {
		return ctrl.Result{}, nil
	}
	pv, err := s.BoundVolume(ctx, vs.Namespace, *vs.Spec.Source.PersistentVolumeClaimName)
	var wait *driver.WaitError
	switch {
	case errors.Is(err, driver.ErrNotLabVolume):
		return ctrl.Result{}, nil // another storage's snapshot
	case errors.As(err, &wait):
		return ctrl.Result{RequeueAfter: snapshotRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	if msg := s.secondaryImageRefusal(pv.Spec.CSI.VolumeHandle); msg != "" {
		return ctrl.Result{RequeueAfter: driver.Retry}, s.failSnapshot(ctx, vs, msg)
	}
	policy, err := s.snapshotPolicy(ctx, vs, pv.Spec.CSI.Driver)
	if err != nil {
		return ctrl.Result{RequeueAfter: driver.Retry}, s.failSnapshot(ctx, vs, err.Error())
	}
	if !controllerutil.ContainsFinalizer(vs, snapshotFinalizer) {
		patch := client.MergeFrom(vs.DeepCopy())
		controllerutil.AddFinalizer(vs, snapshotFinalizer)
		return ctrl.Result{}, s.Client.Patch(ctx, vs, patch)
	}
	handle := "snapshot-" + string(vs.UID)
	if err := s.takeSnapshot(ctx, pv.Spec.CSI.VolumeHandle, handle); err != nil {
		return ctrl.Result{}, err
	}
	content, err := s.ensureContent(ctx, vs, pv, policy, handle)
	if err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(vs.DeepCopy())
	size := content.Status.RestoreSize
	vs.Status = &snapshotv1.VolumeSnapshotStatus{
		BoundVolumeSnapshotContentName: ptr.To(content.Name),
		CreationTime:                   ptr.To(metav1.Unix(0, ptr.Deref(content.Status.CreationTime, 0))),
		ReadyToUse:                     ptr.To(true),
		RestoreSize:                    resource.NewQuantity(ptr.Deref(size, 0), resource.BinarySI),
	}
	if err := s.Client.Status().Patch(ctx, vs, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to patch status of snapshot %s: %w", klog.KObj(vs), err)
	}
	ctrl.LoggerFrom(ctx).Info("Took snapshot", "snapshot", klog.KObj(vs), "volume", pv.Spec.CSI.VolumeHandle, "handle", handle)
	return ctrl.Result{}, nil
}

// snapshotPolicy is the deletion policy of the snapshot's class; Delete without a class.
func (s *store) snapshotPolicy(ctx context.Context, vs *snapshotv1.VolumeSnapshot, driver string) (snapshotv1.DeletionPolicy, error) {
	if vs.Spec.VolumeSnapshotClassName == nil {
		return snapshotv1.VolumeSnapshotContentDelete, nil
	}
	class := &snapshotv1.VolumeSnapshotClass{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: *vs.Spec.VolumeSnapshotClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("VolumeSnapshotClass %s does not exist: create it or leave volumeSnapshotClassName unset", *vs.Spec.VolumeSnapshotClassName)
		}
		return "", err
	}
	if class.Driver != driver {
		return "", fmt.Errorf("VolumeSnapshotClass %s is for driver %s, but the volume is of driver %s", class.Name, class.Driver, driver)
	}
	return class.DeletionPolicy, nil
}

// failSnapshot reports why a snapshot cannot be taken in its status, as snapshot-controller does.
func (s *store) failSnapshot(ctx context.Context, vs *snapshotv1.VolumeSnapshot, msg string) error {
	if vs.Status != nil && vs.Status.Error != nil && ptr.Deref(vs.Status.Error.Message, "") == msg {
		return nil
	}
	patch := client.MergeFrom(vs.DeepCopy())
	if vs.Status == nil {
		vs.Status = &snapshotv1.VolumeSnapshotStatus{}
	}
	vs.Status.ReadyToUse = ptr.To(false)
	vs.Status.Error = &snapshotv1.VolumeSnapshotError{Time: ptr.To(metav1.Now()), Message: ptr.To(msg)}
	if err := s.Client.Status().Patch(ctx, vs, patch); err != nil {
		return fmt.Errorf("failed to patch status of snapshot %s: %w", klog.KObj(vs), err)
	}
	return nil
}

// takeSnapshot copies the volume at one instant (CopyVolume) into the snapshot's directory,
// staged and renamed, so a snapshot directory is always complete.
func (s *store) takeSnapshot(ctx context.Context, volume, handle string) error {
	dst := state.SnapshotPath(s.Opts.DataDir, handle)
	if ok, err := driver.Exists(dst); err != nil || ok {
		return err
	}
	staging := driver.StagingPath(s.Opts.DataDir, handle)
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	began := time.Now()
	n, err := s.CopyVolume(volume, staging)
	if err != nil {
		return fmt.Errorf("failed to snapshot volume %s: %w", volume, err)
	}
	if err := os.Rename(staging, dst); err != nil {
		return fmt.Errorf("failed to snapshot volume %s: %w", volume, err)
	}
	ctrl.LoggerFrom(ctx).Info("Copied volume into snapshot", "volume", volume, "handle", handle, "bytes", n,
		"duration", time.Since(began).Round(time.Millisecond))
	return nil
}

// ensureContent creates the snapshot's VolumeSnapshotContent and marks it ready.
func (s *store) ensureContent(ctx context.Context, vs *snapshotv1.VolumeSnapshot, pv *corev1.PersistentVolume,
	policy snapshotv1.DeletionPolicy, handle string) (*snapshotv1.VolumeSnapshotContent, error) {
	content := &snapshotv1.VolumeSnapshotContent{}
	err := s.Client.Get(ctx, client.ObjectKey{Name: contentName(vs)}, content)
	if apierrors.IsNotFound(err) {
		content = &snapshotv1.VolumeSnapshotContent{
			ObjectMeta: metav1.ObjectMeta{Name: contentName(vs)},
			Spec: snapshotv1.VolumeSnapshotContentSpec{
				VolumeSnapshotRef: corev1.ObjectReference{
					APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot",
					Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID,
				},
				DeletionPolicy:          policy,
				Driver:                  pv.Spec.CSI.Driver,
				VolumeSnapshotClassName: vs.Spec.VolumeSnapshotClassName,
				Source:                  snapshotv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(pv.Spec.CSI.VolumeHandle)},
				SourceVolumeMode:        ptr.To(ptr.Deref(pv.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)),
			},
		}
		if err := s.Client.Create(ctx, content); err != nil {
			return nil, fmt.Errorf("failed to create VolumeSnapshotContent %s: %w", content.Name, err)
		}
	} else if err != nil {
		return nil, err
	}
	if content.Status != nil && ptr.Deref(content.Status.ReadyToUse, false) {
		return content, nil
	}
	patch := client.MergeFrom(content.DeepCopy())
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	content.Status = &snapshotv1.VolumeSnapshotContentStatus{
		SnapshotHandle: ptr.To(handle),
		CreationTime:   ptr.To(time.Now().UnixNano()),
		RestoreSize:    ptr.To(capacity.Value()),
		ReadyToUse:     ptr.To(true),
	}
	if err := s.Client.Status().Patch(ctx, content, patch); err != nil {
		return nil, fmt.Errorf("failed to patch status of VolumeSnapshotContent %s: %w", content.Name, err)
	}
	return content, nil
}

// deleteSnapshot removes a deleted snapshot's data and content (policy Delete), then its finalizer.
func (s *store) deleteSnapshot(ctx context.Context, vs *snapshotv1.VolumeSnapshot) error {
	if !controllerutil.ContainsFinalizer(vs, snapshotFinalizer) {
		return nil
	}
	handle := "snapshot-" + string(vs.UID)
	content := &snapshotv1.VolumeSnapshotContent{}
	err := s.Client.Get(ctx, client.ObjectKey{Name: contentName(vs)}, content)
	switch {
	case apierrors.IsNotFound(err):
		// Never created, or removed by an earlier pass: only data may be left.
		if err := os.RemoveAll(state.SnapshotPath(s.Opts.DataDir, handle)); err != nil {
			return fmt.Errorf("failed to remove snapshot data %s: %w", handle, err)
		}
	case err != nil:
		return err
	case content.Spec.DeletionPolicy == snapshotv1.VolumeSnapshotContentDelete:
		if content.Status != nil && content.Status.SnapshotHandle != nil {
			handle = *content.Status.SnapshotHandle
		}
		if err := os.RemoveAll(state.SnapshotPath(s.Opts.DataDir, handle)); err != nil {
			return fmt.Errorf("failed to remove snapshot data %s: %w", handle, err)
		}
		if err := s.Client.Delete(ctx, content); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete VolumeSnapshotContent %s: %w", content.Name, err)
		}
	}
	patch := client.MergeFrom(vs.DeepCopy())
	controllerutil.RemoveFinalizer(vs, snapshotFinalizer)
	if err := s.Client.Patch(ctx, vs, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted snapshot", "snapshot", klog.KObj(vs), "handle", handle)
	return nil
}

// snapshotSource returns the VolumeSnapshot a PVC is to be restored from, if any.
func snapshotSource(pvc *corev1.PersistentVolumeClaim) (client.ObjectKey, bool) {
	if ref := pvc.Spec.DataSourceRef; ref != nil {
		key := client.ObjectKey{Namespace: ptr.Deref(ref.Namespace, ""), Name: ref.Name}
		if key.Namespace == "" {
			key.Namespace = pvc.Namespace
		}
		return key, ptr.Deref(ref.APIGroup, "") == snapshotv1.GroupName && ref.Kind == "VolumeSnapshot"
	}
	if ref := pvc.Spec.DataSource; ref != nil {
		return client.ObjectKey{Namespace: pvc.Namespace, Name: ref.Name},
			ptr.Deref(ref.APIGroup, "") == snapshotv1.GroupName && ref.Kind == "VolumeSnapshot"
	}
	return client.ObjectKey{}, false
}

// populate fills the new volume handle of a PVC restored from a VolumeSnapshot with the
// snapshot's data, before its PV exists: the PVC is provisioned only once the snapshot is
// ready, as external-provisioner does.
//
// A volume that exists already was filled, and is never copied again: CreateVolume is
// idempotent by name (container-storage-interface/spec spec.md, CreateVolume: a compatible
// volume of that name is returned as it is), and provision runs again whenever the PVC changes
// before its PV is in the cache. A second copy would replace a restored volume with whatever
// the snapshot holds by then, nothing once the snapshot is deleted (its PVC Bound, a restore's
// hold released): an empty volume where the data was.
func (s *store) populate(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, handle string) (ctrl.Result, error) {
	key, ok := snapshotSource(pvc)
	if !ok {
		return ctrl.Result{}, nil
	}
	if filled, err := driver.Exists(state.VolumePath(s.Opts.DataDir, handle)); err != nil || filled {
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("pvc", klog.KObj(pvc), "snapshot", key)
	vs := &snapshotv1.VolumeSnapshot{}
	if err := s.Client.Get(ctx, key, vs); err != nil || !snapshotReady(vs) {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		log.V(1).Info("Waiting for the snapshot to be ready")
		return ctrl.Result{RequeueAfter: snapshotRetry}, nil
	}
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: contentName(vs)}, content); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get content of snapshot %s: %w", key, err)
	}
	if content.Spec.Driver != sc.Provisioner || content.Status == nil || content.Status.SnapshotHandle == nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf(
			"PVC %s cannot be restored from snapshot %s of driver %s: use a storage class of that driver",
			klog.KObj(pvc), key, content.Spec.Driver))
	}
	src := state.SnapshotPath(s.Opts.DataDir, *content.Status.SnapshotHandle)
	if ok, err := driver.Exists(src); err != nil {
		return ctrl.Result{}, err
	} else if !ok {
		return ctrl.Result{}, fmt.Errorf("the data of snapshot %s is missing from %s", key, src)
	}
	staging := driver.StagingPath(s.Opts.DataDir, handle)
	if err := os.RemoveAll(staging); err != nil {
		return ctrl.Result{}, err
	}
	n, err := driver.CopyTree(src, staging)
	if err == nil {
		err = driver.ReplaceDir(staging, state.VolumePath(s.Opts.DataDir, handle))
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to restore snapshot %s into volume %s: %w", key, handle, err)
	}
	log.Info("Restored volume from snapshot", "volume", handle, "bytes", n)
	return ctrl.Result{}, nil
}
