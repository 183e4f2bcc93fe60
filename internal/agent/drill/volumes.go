package drill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// doNotDelete is VolSync's label that keeps a snapshot from its cleanup (vrg/volsync_image.go).
const doNotDelete = "volsync.backube/do-not-delete"

// copyVolumes makes, in the sandbox, a PVC for each PVC the group receives with VolSync, from
// the destination's latest image, and waits until they are Bound (their data copied). The point
// each copy is made from is chosen once and kept in status.volumes: the image held then is the
// one the drill uses, whatever syncs complete meanwhile.
func (r *Reconciler) copyVolumes(ctx context.Context, sc *scope) (ctrl.Result, error) {
	var receive []v1alpha1.VolSyncReceivePVC
	if sc.group.Spec.VolSync != nil {
		receive = sc.group.Spec.VolSync.ReceivePVCs
	}
	var waits []string
	for _, rp := range receive {
		if _, ok := sc.namespaces[rp.PVCNamespace]; !ok {
			continue
		}
		wait, err := r.copyVolume(ctx, sc, rp)
		if err != nil {
			return ctrl.Result{}, err
		}
		if wait != "" {
			waits = append(waits, wait)
		}
	}
	if sc.sandbox.Status.Result != "" {
		return ctrl.Result{}, nil
	}
	if len(waits) > 0 {
		sc.waiting(StepCopyingVolumes, "waiting for "+strings.Join(waits, "; "))
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil
	}
	sc.sandbox.Status.Mode = v1alpha1.DrillModeFull
	sc.finish(StepCopyingVolumes, v1alpha1.DrillResultPassed, copiedMessage(len(sc.sandbox.Status.Volumes)))
	return ctrl.Result{}, nil
}

// copyVolume takes one PVC through the copy: point chosen and held, snapshot content, snapshot
// and PVC in the sandbox. It returns what it waits for, "" once the PVC is Bound.
func (r *Reconciler) copyVolume(ctx context.Context, sc *scope, rp v1alpha1.VolSyncReceivePVC) (string, error) {
	vol := sc.volume(rp.PVCNamespace, rp.PVCName)
	if vol == nil {
		wait, err := r.choosePoint(ctx, sc, rp)
		if wait != "" || err != nil {
			return wait, err
		}
		vol = sc.volume(rp.PVCNamespace, rp.PVCName)
	}
	image := &snapshotv1.VolumeSnapshot{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: rp.PVCNamespace, Name: vol.Point}, image); err != nil {
		if apierrors.IsNotFound(err) {
			sc.fail(StepCopyingVolumes, fmt.Sprintf("the VolSync image %s/%s the drill chose is gone: drill again", rp.PVCNamespace, vol.Point))
			return "", nil
		}
		return "", fmt.Errorf("failed to get VolumeSnapshot %s/%s: %w", rp.PVCNamespace, vol.Point, err)
	}
	sandboxNS := sc.namespaces[rp.PVCNamespace]
	vsName := "drill-" + rp.PVCName
	if wait, err := r.ensureContent(ctx, sc, image, sandboxNS, vsName); wait != "" || err != nil {
		return wait, err
	}
	if err := r.ensureSnapshot(ctx, sc, image, sandboxNS, vsName); err != nil {
		return "", err
	}
	return r.ensurePVC(ctx, sc, rp, sandboxNS, vsName, image)
}

// volume is the status's entry of a protected PVC, or nil.
func (sc *scope) volume(namespace, name string) *v1alpha1.DrillVolume {
	for i := range sc.sandbox.Status.Volumes {
		if v := &sc.sandbox.Status.Volumes[i]; v.PVCNamespace == namespace && v.PVCName == name {
			return v
		}
	}
	return nil
}

// choosePoint picks the destination's latest image as the PVC's point, whether or not a sync
// runs: a destination without a trigger syncs continuously, so upstream's VolSync sets its
// lastSyncStartTime again right after every completion (statemachine/machine.go) and a sync is
// almost always running; the latest image is the last complete one all the same. pointTime is
// the start of the destination's sync that made the image (lastSyncTime − lastSyncDuration, as
// VolSync computes the duration), else the snapshot's creation time.
func (r *Reconciler) choosePoint(ctx context.Context, sc *scope, rp v1alpha1.VolSyncReceivePVC) (string, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	key := client.ObjectKey{Namespace: rp.PVCNamespace, Name: rp.PVCName}
	if err := r.Client.Get(ctx, key, rd); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("ReplicationDestination %s", key), nil
		}
		return "", fmt.Errorf("failed to get ReplicationDestination %s: %w", key, err)
	}
	image := volsync.LatestImage(rd)
	if image == nil || rd.Status.LastSyncTime == nil {
		return fmt.Sprintf("the first sync of %s", key), nil
	}
	var start *metav1.Time
	if d := rd.Status.LastSyncDuration; d != nil {
		start = &metav1.Time{Time: rd.Status.LastSyncTime.Add(-d.Duration)}
	} else {
		vs := &snapshotv1.VolumeSnapshot{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: image.Name}, vs); err != nil {
			return "", fmt.Errorf("failed to get VolumeSnapshot %s/%s: %w", key.Namespace, image.Name, err)
		}
		if vs.Status != nil {
			start = vs.Status.CreationTime
		}
	}
	// Held before it is recorded: a sync completing meanwhile deletes the image it replaces.
	held, err := r.holdImage(ctx, sc, rp.PVCNamespace, image.Name)
	if err != nil || !held {
		return fmt.Sprintf("a latest image of %s that stays (%s was replaced)", key, image.Name), err
	}
	sc.sandbox.Status.Volumes = append(sc.sandbox.Status.Volumes, v1alpha1.DrillVolume{
		PVCNamespace: rp.PVCNamespace, PVCName: rp.PVCName, Point: image.Name, PointTime: start,
		SandboxPVC: sc.namespaces[rp.PVCNamespace] + "/" + rp.PVCName,
	})
	return "", nil
}

// holdImage labels the image do-not-delete for the drill, unless someone holds it already, and
// reports whether it is held: false when it is gone or being deleted, or changed meanwhile (the
// label is set with an optimistic lock, and VolSync deletes an image with a precondition on its
// resourceVersion, so an image held is never deleted by VolSync's cleanup).
func (r *Reconciler) holdImage(ctx context.Context, sc *scope, namespace, name string) (bool, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vs); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if vs.DeletionTimestamp != nil {
		return false, nil
	}
	if _, held := vs.Labels[doNotDelete]; held {
		return true, nil
	}
	before := vs.DeepCopy()
	metav1.SetMetaDataLabel(&vs.ObjectMeta, doNotDelete, "true")
	metav1.SetMetaDataAnnotation(&vs.ObjectMeta, vrg.AnnotationHeldBy, holder(sc.sandbox))
	err := r.Client.Patch(ctx, vs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to hold VolumeSnapshot %s/%s for the drill: %w", namespace, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Held the VolSync image for the drill", "snapshot", namespace+"/"+name)
	return true, nil
}

// holder is the drill's value of vrg.AnnotationHeldBy: never a group's key (no "drill:" there).
func holder(sb *v1alpha1.DrillSandbox) string { return "drill:" + sandboxKey(sb) }

// contentName is the pre-provisioned content of a sandbox snapshot: unique per drill and PVC.
func contentName(id, namespace, vsName string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + vsName))
	return "drill-" + id + "-" + hex.EncodeToString(sum[:8])
}

// ensureContent makes the pre-provisioned content with the image's handle, Retain: deleting it,
// or the sandbox's snapshot, leaves the image's data to the image.
func (r *Reconciler) ensureContent(ctx context.Context, sc *scope, image *snapshotv1.VolumeSnapshot, namespace, vsName string) (string, error) {
	src := &snapshotv1.VolumeSnapshotContent{}
	if image.Status == nil || image.Status.BoundVolumeSnapshotContentName == nil || !ptr.Deref(image.Status.ReadyToUse, false) {
		return fmt.Sprintf("VolumeSnapshot %s/%s to be ready", image.Namespace, image.Name), nil
	}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: *image.Status.BoundVolumeSnapshotContentName}, src); err != nil {
		return "", fmt.Errorf("failed to get the content of VolumeSnapshot %s/%s: %w", image.Namespace, image.Name, err)
	}
	if src.Status == nil || src.Status.SnapshotHandle == nil {
		return fmt.Sprintf("the handle of VolumeSnapshot %s/%s", image.Namespace, image.Name), nil
	}
	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{
			Name:        contentName(sc.sandbox.Spec.DrillID, namespace, vsName),
			Labels:      map[string]string{LabelDrill: sc.sandbox.Spec.DrillID},
			Annotations: map[string]string{AnnotationSandbox: sandboxKey(sc.sandbox)},
		},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{
				APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot", Namespace: namespace, Name: vsName,
			},
			DeletionPolicy:          snapshotv1.VolumeSnapshotContentRetain,
			Driver:                  src.Spec.Driver,
			VolumeSnapshotClassName: src.Spec.VolumeSnapshotClassName,
			Source:                  snapshotv1.VolumeSnapshotContentSource{SnapshotHandle: src.Status.SnapshotHandle},
			SourceVolumeMode:        src.Spec.SourceVolumeMode,
		},
	}
	if err := r.Client.Create(ctx, content, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("failed to create VolumeSnapshotContent %s: %w", content.Name, err)
	}
	return "", nil
}

// ensureSnapshot makes the sandbox's snapshot, bound to the pre-provisioned content.
func (r *Reconciler) ensureSnapshot(ctx context.Context, sc *scope, image *snapshotv1.VolumeSnapshot, namespace, vsName string) error {
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: vsName, Labels: map[string]string{LabelDrill: sc.sandbox.Spec.DrillID}},
		Spec: snapshotv1.VolumeSnapshotSpec{
			Source:                  snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(contentName(sc.sandbox.Spec.DrillID, namespace, vsName))},
			VolumeSnapshotClassName: image.Spec.VolumeSnapshotClassName,
		},
	}
	if err := r.Client.Create(ctx, vs, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create VolumeSnapshot %s/%s: %w", namespace, vsName, err)
	}
	return nil
}

// ensurePVC makes the sandbox's PVC, named as the protected one, from the sandbox's snapshot,
// and says what it waits for until it is Bound.
func (r *Reconciler) ensurePVC(ctx context.Context, sc *scope, rp v1alpha1.VolSyncReceivePVC, namespace, vsName string, image *snapshotv1.VolumeSnapshot) (string, error) {
	size := rp.Capacity
	if image.Status != nil && image.Status.RestoreSize != nil && image.Status.RestoreSize.Cmp(size) > 0 {
		size = *image.Status.RestoreSize
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rp.PVCName, Labels: map[string]string{LabelDrill: sc.sandbox.Spec.DrillID}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(rp.StorageClassName),
			AccessModes:      rp.AccessModes,
			VolumeMode:       rp.VolumeMode,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: vsName},
		},
	}
	err := r.Client.Create(ctx, pvc, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)
	}
	if err != nil {
		return "", fmt.Errorf("failed to create PVC %s/%s: %w", namespace, rp.PVCName, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return fmt.Sprintf("PVC %s/%s to be Bound", namespace, rp.PVCName), nil
	}
	return "", nil
}

// copiedMessage says how many volumes the sandbox got from the latest VolSync images.
func copiedMessage(n int) string {
	if n == 1 {
		return "1 volume copied from its latest VolSync image"
	}
	return fmt.Sprintf("%d volumes copied from their latest VolSync images", n)
}
