package csiaddons

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// protectPVC marks the VolumeReplication's PVC (or group, protectGroup) as csi-addons does (finalizers.go, pvc.go): the
// annotation naming its VolumeReplication, then the pvc-protection finalizer, which only the
// VolumeReplication's deletion removes. A PVC another VolumeReplication owns is refused; a PVC
// not found, or already being deleted (no finalizer may be added then), is left as it is.
func (s *store) protectPVC(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (problem string, err error) {
	if vr.Spec.DataSource.Kind == volumeGroupReplicationKind {
		return s.protectGroup(ctx, vr)
	}
	pvc, problem, err := s.sourcePVC(ctx, vr)
	if problem != "" || err != nil || !pvc.DeletionTimestamp.IsZero() {
		return "", err
	}
	owner := pvc.Annotations[VolumeReplicationNameAnnotation]
	if owner != "" && owner != vr.Name {
		return fmt.Sprintf("PVC %s/%s is owned by VolumeReplication %s (annotation %s): a PVC has one VolumeReplication",
			pvc.Namespace, pvc.Name, owner, VolumeReplicationNameAnnotation), nil
	}
	if group := pvc.Annotations[VolumeGroupReplicationNameAnnotation]; group != "" {
		// csi-addons' annotatePVCWithOwner (pvc.go).
		return fmt.Sprintf("PVC (%s/%s) can't be owned by both VolumeReplication and VolumeGroupReplication: VolumeGroupReplication %s owns it",
			pvc.Namespace, pvc.Name, group), nil
	}
	if owner == vr.Name && controllerutil.ContainsFinalizer(pvc, PVCProtectionFinalizer) {
		return "", nil
	}
	before := pvc.DeepCopy()
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[VolumeReplicationNameAnnotation] = vr.Name
	controllerutil.AddFinalizer(pvc, PVCProtectionFinalizer)
	if err := s.Client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return "", fmt.Errorf("failed to protect PVC %s/%s of VolumeReplication %s: %w", pvc.Namespace, pvc.Name, vr.Name, err)
	}
	return "", nil
}

// releasePVC removes what protectPVC put on the PVC, when this VolumeReplication owns it.
func (s *store) releasePVC(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	if vr.Spec.DataSource.Kind == volumeGroupReplicationKind {
		return s.releaseGroup(ctx, vr)
	}
	pvc, problem, err := s.sourcePVC(ctx, vr)
	if problem != "" || err != nil {
		return err
	}
	owner := pvc.Annotations[VolumeReplicationNameAnnotation]
	if owner != "" && owner != vr.Name {
		return nil
	}
	if owner == "" && !controllerutil.ContainsFinalizer(pvc, PVCProtectionFinalizer) {
		return nil
	}
	before := pvc.DeepCopy()
	delete(pvc.Annotations, VolumeReplicationNameAnnotation)
	controllerutil.RemoveFinalizer(pvc, PVCProtectionFinalizer)
	if err := s.Client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("failed to release PVC %s/%s of VolumeReplication %s: %w", pvc.Namespace, pvc.Name, vr.Name, err))
	}
	return nil
}
