package csiaddons

import (
	"fmt"
	"slices"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// groupImage is a consistency group of images: the volumes of a VolumeGroupReplicationContent,
// replicated as one, as ceph-csi replicates an RBD group with group mirroring
// (ceph/ceph-csi 0dad1762, internal/rbd/group/group_mirror.go: MirrorGroupEnable, MirrorGroupPromote,
// MirrorGroupDemote, MirrorGroupResync, MirrorGroupDisable act on the group, never on one of its
// images; rbd-mirror takes one group snapshot of every image at one instant).
//
// Its replication state is the group's (state.GroupPath), and every member image's state follows
// it (update writes the group's state into each member's), so that the lab kubelet and the
// writers, which read a member image's state, see the group's role: a demoted group makes every
// member read-only at once.
type groupImage struct {
	s      *store
	handle string
	// members are the handles of the group's images, sorted.
	members []string
}

var _ image = groupImage{}

func (g groupImage) String() string { return "group " + g.handle }

func (g groupImage) notFound() string {
	return fmt.Sprintf("volume group %s not found: group not found (rbd-mirror deleted it when its primary's mirroring was disabled)", g.handle)
}

func (g groupImage) state() (state.ImageState, error) {
	return state.Read(state.GroupPath(g.s.Opts.DataDir, g.handle))
}

func (g groupImage) peerState() (state.ImageState, error) {
	return state.Read(state.GroupPath(g.s.Opts.PeerDataDir, g.handle))
}

func (g groupImage) update(change func(*state.ImageState)) (state.ImageState, error) {
	return updateGroupState(g.s.Opts.DataDir, g.handle, g.members, change)
}

func (g groupImage) updatePeer(change func(*state.ImageState)) (state.ImageState, error) {
	return updateGroupState(g.s.Opts.PeerDataDir, g.handle, g.members, change)
}

// updateGroupState changes the state of the group with handle in dataDir and gives every member
// image that state.
func updateGroupState(dataDir, handle string, members []string, change func(*state.ImageState)) (state.ImageState, error) {
	st, err := state.Update(state.GroupPath(dataDir, handle), change)
	if err != nil {
		return st, err
	}
	for _, m := range members {
		if _, err := state.Update(state.ImagePath(dataDir, m), func(ms *state.ImageState) { *ms = st }); err != nil {
			return st, fmt.Errorf("failed to give image %s the state of its group %s: %w", m, handle, err)
		}
	}
	return st, nil
}

// lock takes every member's image lock, in handle order as CopyVolumes does.
func (g groupImage) lock() func() {
	unlocks := make([]func(), 0, len(g.members))
	for _, m := range g.members {
		unlocks = append(unlocks, g.s.Images.Lock(m))
	}
	return func() {
		for _, u := range slices.Backward(unlocks) {
			u()
		}
	}
}

func (g groupImage) mirror(epoch int64) (state.ImageState, error) { return g.s.mirrorGroup(g, epoch) }

func (g groupImage) deleteData(peer bool) error {
	dir, update := g.s.Opts.DataDir, g.update
	if peer {
		dir, update = g.s.Opts.PeerDataDir, g.updatePeer
	}
	if _, err := update(markDeleted); err != nil {
		return err
	}
	for _, m := range g.members {
		if err := removeImageData(state.VolumePath(dir, m)); err != nil {
			return err
		}
	}
	return nil
}
