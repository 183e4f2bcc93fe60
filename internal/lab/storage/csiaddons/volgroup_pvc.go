package csiaddons

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// protectMembers marks the group's PVCs as csi-addons' updateFinalizerAndAnnotationOnPVCs does
// (volumegroupreplication_controller.go, pvc.go annotatePVCWithOwner, finalizers.go): each member
// gets the volume-group-replication-name annotation and the vgr-protection finalizer; a PVC that
// was a member (status.persistentVolumeClaimsRefList) and no longer matches loses both. problem
// is set when a member belongs to a VolumeReplication or to another group.
func (s *store) protectMembers(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, members []groupMember) (string, error) {
	current := make([]string, 0, len(members))
	for i := range members {
		pvc := &members[i].pvc
		current = append(current, pvc.Name)
		if owner := pvc.Annotations[VolumeReplicationNameAnnotation]; owner != "" {
			return fmt.Sprintf("PVC (%s/%s) can't be owned by both VolumeReplication and VolumeGroupReplication: VolumeReplication %s owns it", pvc.Namespace, pvc.Name, owner), nil
		}
		if owner := pvc.Annotations[VolumeGroupReplicationNameAnnotation]; owner != "" && owner != vgr.Name {
			return fmt.Sprintf("PVC (%s/%s) not owned by correct VolumeReplication/VolumeGroupReplication %q: %s owns it", pvc.Namespace, pvc.Name, vgr.Name, owner), nil
		}
		if !pvc.DeletionTimestamp.IsZero() {
			continue // a member being deleted keeps what it has; no finalizer may be added
		}
		if err := patchMeta(ctx, s.Client, pvc, func() {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[VolumeGroupReplicationNameAnnotation] = vgr.Name
			controllerutil.AddFinalizer(pvc, VGRProtectionFinalizer)
		}); err != nil {
			return "", fmt.Errorf("failed to protect PVC %s/%s of VolumeGroupReplication %s: %w", pvc.Namespace, pvc.Name, vgr.Name, err)
		}
	}
	for _, ref := range vgr.Status.PersistentVolumeClaimsRefList {
		if slices.Contains(current, ref.Name) {
			continue
		}
		if err := s.releaseMember(ctx, vgr, ref.Name); err != nil {
			return "", err
		}
	}
	return "", nil
}

// releaseMember removes what protectMembers put on the PVC name, when the group owns it.
func (s *store) releaseMember(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, name string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: vgr.Namespace, Name: name}, pvc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if owner := pvc.Annotations[VolumeGroupReplicationNameAnnotation]; owner != "" && owner != vgr.Name {
		return nil
	}
	if err := patchMeta(ctx, s.Client, pvc, func() {
		delete(pvc.Annotations, VolumeGroupReplicationNameAnnotation)
		controllerutil.RemoveFinalizer(pvc, VGRProtectionFinalizer)
	}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("failed to release PVC %s/%s of VolumeGroupReplication %s: %w", vgr.Namespace, name, vgr.Name, err))
	}
	return nil
}
