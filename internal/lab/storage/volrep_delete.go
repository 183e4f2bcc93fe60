package storage

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// deleteVolRep disables mirroring of the image (a primary becomes an ordinary writable volume;
// a secondary stays read-only until a VolumeReplication promotes it), then releases the PVC as
// csi-addons does: its annotation and pvc-protection finalizer go, then the VolumeReplication's
// finalizer.
func (s *store) deleteVolRep(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	if !controllerutil.ContainsFinalizer(vr, VolumeReplicationFinalizer) {
		s.reports.forget(vr.UID)
		return nil
	}
	handle, _, _, problem, err := s.resolveImage(ctx, vr)
	if err != nil {
		return err
	}
	if problem == "" {
		if _, err := s.images.UpdateState(handle, func(st *ImageState) {
			if st.Role == RolePrimary {
				st.Role = RoleNone
			}
		}); err != nil {
			return err
		}
	}
	if err := s.releasePVC(ctx, vr); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(vr, VolumeReplicationFinalizer)
	if err := s.client.Update(ctx, vr); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.reports.forget(vr.UID)
	return nil
}
