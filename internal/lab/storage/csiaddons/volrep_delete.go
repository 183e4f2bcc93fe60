package csiaddons

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// Deleting a VolumeReplication, as csi-addons and ceph-csi do it
// (csi-addons/kubernetes-csi-addons d4d7fea4,
// internal/controller/replication.storage/volumereplication_controller.go, Reconcile's deletion
// branch, disableVolumeReplication; ceph/ceph-csi internal/csi-addons/rbd/replication.go,
// DisableVolumeReplication, and internal/rbd/replication.go, DisableVolumeReplication):
//
//   - csi-addons asks the driver to disable mirroring, and only once that succeeded removes the
//     PVC's annotation and pvc-protection finalizer and then the VolumeReplication's finalizer.
//     An error keeps all of them and is retried with the controller's backoff; the
//     VolumeReplication's status says nothing of it. NotFound (the image is gone) counts as
//     success.
//   - ceph-csi disables mirroring of a primary image: it becomes an ordinary volume, and
//     rbd-mirror deletes the non-primary copies of it on the peers.
//   - ceph-csi never disables mirroring of a non-primary image. It answers success, changing
//     nothing, when the image is up+replaying (a healthy secondary of a live primary: the
//     image goes when that primary's mirroring is disabled), and InvalidArgument otherwise: a
//     secondary whose peer is demoted too (a relocation's final sync), unreachable, or
//     split-brained, or one still syncing its first snapshot, cannot be released.
//
// The lab's rbd-mirror deletes a peer's non-primary copy when the primary's mirroring is
// disabled while the peer is reachable; a peer unreachable then deletes its copy when its own
// storage next reconciles or deletes a VolumeReplication of it (deleteIfUnmirrored).

// errSecondaryNotReplaying is ceph-csi's InvalidArgument for a non-primary image that does not
// replay.
var errSecondaryNotReplaying = errors.New("InvalidArgument")

// deleteVolRep disables mirroring of the image as ceph-csi does, then releases the PVC as
// csi-addons does: its annotation and pvc-protection finalizer go, then the VolumeReplication's
// finalizer. A refusal is returned, so the controller retries it with its backoff.
func (s *store) deleteVolRep(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	if !controllerutil.ContainsFinalizer(vr, VolumeReplicationFinalizer) {
		s.reports.forget(vr.UID)
		return nil
	}
	img, _, _, problem, err := s.resolveImage(ctx, vr)
	if err != nil {
		return err
	}
	if problem == "" {
		if err := s.disableMirroring(img); err != nil {
			return fmt.Errorf("failed to disable mirroring of the image of VolumeReplication %s/%s: %w", vr.Namespace, vr.Name, err)
		}
	}
	if err := s.releasePVC(ctx, vr); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(vr, VolumeReplicationFinalizer)
	if err := s.Client.Update(ctx, vr); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.reports.forget(vr.UID)
	return nil
}

// disableMirroring is ceph-csi's DisableVolumeReplication of one image, or of a group.
func (s *store) disableMirroring(img image) error {
	peerUp, peer, local, err := s.observe(img)
	if err != nil {
		return err
	}
	if _, err := s.deleteIfUnmirrored(img, peerUp, peer, local); err != nil {
		return err
	}
	if local, err = img.state(); err != nil {
		return err
	}
	switch {
	case local.Deleted || local.Role == state.RoleNone:
		// Gone (NotFound, which csi-addons takes as success), or not mirrored.
		return nil
	case local.Role == state.RoleSecondary:
		if replaying(local, peerUp, peer) {
			return nil
		}
		return fmt.Errorf("%w: secondary %s is not up+replaying (%s): only the primary's side can disable its mirroring",
			errSecondaryNotReplaying, img, notReplayingBecause(local, peerUp, peer))
	}
	if _, err := img.update(func(st *state.ImageState) {
		st.Role, st.MirrorDisabled, st.FinalMirrorPending = state.RoleNone, true, false
	}); err != nil {
		return err
	}
	if peerUp && peer.Role == state.RoleSecondary && !peer.Deleted && peer.Epoch <= local.Epoch {
		return img.deleteData(true)
	}
	return nil
}

// replaying reports whether a secondary image is up+replaying: its peer is a reachable primary
// and it holds a mirror of that primary's epoch (a secondary still syncing its first snapshot
// from a newly promoted primary, or diverged, is not).
func replaying(local state.ImageState, peerUp bool, peer state.ImageState) bool {
	return local.Role == state.RoleSecondary && !local.NeedsResync && peerUp && peer.Role == state.RolePrimary &&
		local.Epoch == peer.Epoch && local.LastSyncTime != nil
}

// notReplayingBecause says why a secondary image is not replaying.
func notReplayingBecause(local state.ImageState, peerUp bool, peer state.ImageState) string {
	switch {
	case local.NeedsResync:
		return "it is split-brained: up+error"
	case !peerUp:
		return "its peer is unreachable"
	case peer.Role == state.RoleSecondary:
		return "its peer is demoted too: up+unknown"
	case peer.Role != state.RolePrimary:
		return "its peer's image is not mirrored"
	}
	return "it is still syncing from the peer's primary"
}

// deleteIfUnmirrored is rbd-mirror deleting a non-primary image whose primary had its mirroring
// disabled (the peer's image is MirrorDisabled, of this image's epoch or later). It reports
// whether it deleted it.
func (s *store) deleteIfUnmirrored(img image, peerUp bool, peer, local state.ImageState) (bool, error) {
	if !peerUp || !peer.MirrorDisabled || local.Role != state.RoleSecondary || local.Deleted || peer.Epoch < local.Epoch {
		return false, nil
	}
	err := img.deleteData(false)
	return err == nil, err
}
