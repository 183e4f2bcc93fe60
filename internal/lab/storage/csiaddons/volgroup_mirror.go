package csiaddons

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// A group mirror: one crash-consistent point of every member of a group, applied on the peer as
// one. rbd-mirror takes a group snapshot of all the group's images at one instant (ceph/ceph-csi
// 0dad1762, internal/rbd/group/group_mirror.go; `rbd mirror group snapshot`) and the peer
// replays a group snapshot whole or not at all. The lab does it in three steps, the second of
// which commits:
//
//  1. copy: every member's image lock taken and every process that uses any member stopped
//     (driver.Store.CopyVolumes), each member copied into a staging directory beside its image on
//     the peer (state.GroupStagingPrefix). Cut here, the peer holds its previous point, whole; the
//     staged copies are garbage, removed by whoever next settles the group.
//  2. intent: a record naming every staged copy and the point's time and epoch, written
//     atomically on the peer (state.GroupIntentPath). From here on the new point is decided.
//  3. apply: each member's image replaced by its staged copy (a rename), each member's state and
//     the group's set, and the intent removed last. Cut here, the intent is still there: whoever
//     next settles the group (the peer's storage at its next reconcile of the group, before any
//     promotion; this storage before its next mirror) completes the replacement, so no one ever
//     acts on half a group.
//
// Both storages take the group's lock file on the receiving side (groupLock) while they stage,
// apply or settle, so a sender never stages while the peer settles.

// groupIntent is the intent record of a group mirror being applied.
type groupIntent struct {
	Epoch    int64         `json:"epoch"`
	Taken    time.Time     `json:"taken"`
	Duration time.Duration `json:"duration"`
	Bytes    int64         `json:"bytes"`
	Members  []stagedCopy  `json:"members"`
}

// stagedCopy is a member's copy waiting to replace its image.
type stagedCopy struct {
	Handle string `json:"handle"`
	Staged string `json:"staged"`
}

// mirrorGroup sends one point of every member of g to the peer and applies it there as one; the
// peer's group becomes a secondary of epoch.
func (s *store) mirrorGroup(g groupImage, epoch int64) (state.ImageState, error) {
	// A sender cut by the lab's knob is gone: it neither sends nor completes anything.
	if err := s.groupTransferDown(); err != nil {
		return state.ImageState{}, err
	}
	peerDir := s.Opts.PeerDataDir
	unlock, err := groupLock(peerDir, g.handle)
	if err != nil {
		return state.ImageState{}, err
	}
	defer unlock()
	// rbd-mirror replays one group snapshot after the other: the one before is completed first.
	if err := settleGroup(peerDir, g.handle); err != nil {
		return state.ImageState{}, err
	}
	began := time.Now()
	prefix := state.GroupStagingPrefix(peerDir, g.handle) + strconv.FormatInt(began.UnixNano(), 10) + "-"
	intent := groupIntent{Epoch: epoch, Members: make([]stagedCopy, len(g.members))}
	staged := make([]string, len(g.members))
	for i, m := range g.members {
		staged[i] = prefix + m
		intent.Members[i] = stagedCopy{Handle: m, Staged: staged[i]}
	}
	// No write acknowledged before now is missing from the copies, taken after this.
	intent.Taken = time.Now()
	n, err := s.CopyVolumes(g.members, staged)
	if err != nil {
		removeAll(staged)
		return state.ImageState{}, fmt.Errorf("failed to copy the members of %s: %w", g, err)
	}
	if err := s.cutGroupTransfer(GroupCutBeforeIntent); err != nil {
		return state.ImageState{}, err
	}
	intent.Duration, intent.Bytes = time.Since(began), n
	if err := driver.WriteJSON(state.GroupIntentPath(peerDir, g.handle), intent); err != nil {
		removeAll(staged)
		return state.ImageState{}, fmt.Errorf("failed to record the intent of a mirror of %s: %w", g, err)
	}
	if err := applyIntent(peerDir, g.handle, intent, s.cutGroupTransfer); err != nil {
		return state.ImageState{}, err
	}
	return g.update(func(st *state.ImageState) {
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &intent.Taken, intent.Duration, intent.Bytes
	})
}

// settleGroup completes, in the data directory dataDir, the group mirror whose intent is
// recorded there, and removes staged copies no intent names (a mirror cut before its intent).
// The caller holds groupLock(dataDir, handle).
func settleGroup(dataDir, handle string) error {
	var intent groupIntent
	err := driver.ReadJSON(state.GroupIntentPath(dataDir, handle), &intent)
	switch {
	case err == nil:
		if err := applyIntent(dataDir, handle, intent, nil); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("failed to read the mirror intent of group %s: %w", handle, err)
	}
	stale, err := filepath.Glob(state.GroupStagingPrefix(dataDir, handle) + "*")
	if err != nil {
		return err
	}
	removeAll(stale)
	return nil
}

// applyIntent replaces each member's image in dataDir by its staged copy (one already replaced,
// its copy gone, is skipped), gives the group and its members the point's state, and removes the
// intent. A group promoted since the intent was recorded keeps its images: the staged copies are
// dropped. The images are replaced under the group's state lock, which a promotion takes too.
// cut, when not nil, is the lab's knob that cuts the transfer after the first member.
func applyIntent(dataDir, handle string, intent groupIntent, cut func(GroupCut) error) error {
	members := make([]string, 0, len(intent.Members))
	for _, m := range intent.Members {
		members = append(members, m.Handle)
	}
	var applyErr error
	applied := false
	st, err := state.Update(state.GroupPath(dataDir, handle), func(st *state.ImageState) {
		if promotedSince(*st, intent.Epoch) {
			return
		}
		if applyErr = replaceMembers(dataDir, handle, intent, cut); applyErr != nil {
			return
		}
		applied = true
		// A group rbd-mirror deleted earlier is bootstrapped again.
		st.Role, st.Epoch, st.Deleted, st.MirrorDisabled = state.RoleSecondary, intent.Epoch, false, false
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &intent.Taken, intent.Duration, intent.Bytes
	})
	if err == nil {
		err = applyErr
	}
	if err != nil {
		return err
	}
	if applied {
		if _, err := updateGroupState(dataDir, handle, members, func(ms *state.ImageState) { *ms = st }); err != nil {
			return err
		}
	} else {
		for _, m := range intent.Members {
			removeAll([]string{m.Staged})
		}
	}
	if err := os.Remove(state.GroupIntentPath(dataDir, handle)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove the mirror intent of group %s: %w", handle, err)
	}
	return nil
}

// replaceMembers replaces each member's image by its staged copy, skipping one already replaced.
func replaceMembers(dataDir, handle string, intent groupIntent, cut func(GroupCut) error) error {
	for i, m := range intent.Members {
		if ok, err := driver.Exists(m.Staged); err != nil {
			return err
		} else if ok {
			if err := driver.ReplaceDir(m.Staged, state.VolumePath(dataDir, m.Handle)); err != nil {
				return fmt.Errorf("failed to apply the mirror of image %s of group %s: %w", m.Handle, handle, err)
			}
		}
		if i == 0 && cut != nil {
			if err := cut(GroupCutAfterFirstMember); err != nil {
				return err
			}
		}
	}
	return nil
}

// groupLock takes the lock file of the group with handle in dataDir, shared by the storage that
// receives the group's mirrors there and the one that sends them, and returns its release.
func groupLock(dataDir, handle string) (func(), error) {
	path := state.GroupPath(dataDir, handle) + ".mirror-lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the mirror lock of group %s: %w", handle, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock the mirrors of group %s: %w", handle, err)
	}
	return func() { _ = f.Close() }, nil
}

// removeAll removes the directories, ignoring errors: they are scratch copies.
func removeAll(dirs []string) {
	for _, d := range dirs {
		if strings.TrimSpace(d) != "" {
			_ = os.RemoveAll(d)
		}
	}
}
