package csiaddons

import (
	"fmt"
	"os"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// image is what the VolumeReplication model (volrep.go) drives: the image of one volume, a PVC's
// (volumeImage), or a consistency group of images, a VolumeGroupReplication's (groupImage,
// volgroup_image.go). Either has one role, epoch and last sync on each cluster, is promoted,
// demoted, resynced and mirrored as one, and its mirror is one crash-consistent point.
type image interface {
	// String names it in messages: "image <handle>", "group <handle>".
	String() string
	// notFound is ceph-csi's description of the NotFound it answers once rbd-mirror deleted it.
	notFound() string
	// state and peerState read its replication state here and on the peer.
	state() (state.ImageState, error)
	peerState() (state.ImageState, error)
	// update and updatePeer change its replication state here and on the peer.
	update(change func(*state.ImageState)) (state.ImageState, error)
	updatePeer(change func(*state.ImageState)) (state.ImageState, error)
	// lock holds off this storage's writers of its data until the returned function is called.
	lock() func()
	// mirror sends a crash-consistent copy of it to the peer and applies it there as one; the
	// peer's copy becomes a secondary of epoch.
	mirror(epoch int64) (state.ImageState, error)
	// deleteData removes its data here, or on the peer, and marks it deleted there.
	deleteData(peer bool) error
}

// volumeImage is the image of one volume.
type volumeImage struct {
	s      *store
	handle string
}

var _ image = volumeImage{}

func (v volumeImage) String() string   { return "image " + v.handle }
func (v volumeImage) notFound() string { return goneDescription(v.handle) }

func (v volumeImage) state() (state.ImageState, error)     { return v.s.Images.State(v.handle) }
func (v volumeImage) peerState() (state.ImageState, error) { return v.s.Images.PeerState(v.handle) }

func (v volumeImage) update(change func(*state.ImageState)) (state.ImageState, error) {
	return v.s.Images.UpdateState(v.handle, change)
}

func (v volumeImage) updatePeer(change func(*state.ImageState)) (state.ImageState, error) {
	return v.s.Images.UpdatePeerState(v.handle, change)
}

func (v volumeImage) lock() func() { return v.s.Images.Lock(v.handle) }

func (v volumeImage) mirror(epoch int64) (state.ImageState, error) {
	return v.s.mirrorVolume(v.handle, epoch)
}

func (v volumeImage) deleteData(peer bool) error {
	dir, update := v.s.Images.VolumeDir(v.handle), v.update
	if peer {
		dir, update = v.s.Images.PeerVolumeDir(v.handle), v.updatePeer
	}
	if _, err := update(markDeleted); err != nil {
		return err
	}
	return removeImageData(dir)
}

// markDeleted is the state of an image rbd-mirror deleted.
func markDeleted(st *state.ImageState) {
	st.Role, st.Deleted, st.FinalMirrorPending, st.NeedsResync = state.RoleNone, true, false, false
}

// removeImageData removes an image's data.
func removeImageData(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to delete image data %s: %w", dir, err)
	}
	return nil
}
