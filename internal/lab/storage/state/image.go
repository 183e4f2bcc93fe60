package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ImageRole is a volume image's replication role in the lab storage.
type ImageRole string

const (
	// RoleNone is an image that is not replicated: writable, mirrored nowhere.
	RoleNone ImageRole = ""
	// RolePrimary is writable and mirrored to the peer.
	RolePrimary ImageRole = "primary"
	// RoleSecondary is read-only and receives the peer primary's mirror.
	RoleSecondary ImageRole = "secondary"
)

// ImageState is what the lab storage records about one image, in images/<handle>.json.
type ImageState struct {
	Role ImageRole `json:"role,omitempty"`
	// Epoch increases at every promotion. An image promoted while its peer was unreachable has a
	// higher epoch than the old primary, which is how a split brain is recognised later.
	Epoch int64 `json:"epoch,omitempty"`
	// NeedsResync marks a secondary whose data diverged from the primary (it was written as a
	// primary after the peer was promoted). It receives no mirror until it is resynced.
	NeedsResync bool `json:"needsResync,omitempty"`
	// Operation is the last role change (a VolumeReplication condition reason: Promoted,
	// ForcePromoted, Demoted) and OperationTime when it happened. They are kept with the image,
	// not only in a status, so the status can be recomputed from what is observed at every
	// reconcile: a status written from a stale cache can never lose them.
	Operation     string     `json:"operation,omitempty"`
	OperationTime *time.Time `json:"operationTime,omitempty"`
	// LastSyncTime is when the last completed mirror to the peer was taken (primary side) or
	// applied (secondary side).
	LastSyncTime *time.Time `json:"lastSyncTime,omitempty"`
	// LastSyncDuration is how long the last mirror took.
	LastSyncDuration time.Duration `json:"lastSyncDuration,omitempty"`
	// LastSyncBytes is how many bytes the last mirror carried.
	LastSyncBytes int64 `json:"lastSyncBytes,omitempty"`
	// FinalMirrorPending marks an image demoted while its final mirror could not be sent (the
	// peer unreachable or not ready): it holds writes the peer lacks, and it is sent as soon as
	// the peer can take it.
	FinalMirrorPending bool `json:"finalMirrorPending,omitempty"`
	// MirrorDisabled marks an image whose mirroring was disabled while it was primary (its
	// VolumeReplication deleted): it is an ordinary volume now, and rbd-mirror deletes the
	// peer's non-primary copy of it (Deleted there).
	MirrorDisabled bool `json:"mirrorDisabled,omitempty"`
	// Deleted marks a non-primary image that rbd-mirror deleted because its primary's mirroring
	// was disabled: its data is gone, and the storage answers NotFound for it.
	Deleted bool `json:"deleted,omitempty"`
}

// Writable reports whether a consumer may write to an image in this state.
func (s ImageState) Writable() bool { return s.Role != RoleSecondary && !s.Deleted }

// ErrReadOnly is returned by writes to a secondary image.
var ErrReadOnly = errors.New("image is a secondary (read-only)")

// Update changes the image state at path under an exclusive file lock, so concurrent
// changes from this storage and its peer never lose one another, and writes it atomically.
func Update(path string, change func(*ImageState)) (ImageState, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return ImageState{}, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return ImageState{}, fmt.Errorf("failed to open image state lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return ImageState{}, fmt.Errorf("failed to lock image state: %w", err)
	}
	st, err := Read(path)
	if err != nil {
		return st, err
	}
	change(&st)
	return st, Write(path, st)
}

// Read reads the image state at path; an image never replicated has the zero state.
func Read(path string) (ImageState, error) {
	var st ImageState
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("failed to read image state %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("image state %s is damaged: %w", path, err)
	}
	return st, nil
}

// Write writes the image state at path atomically (a rename).
func Write(path string, st ImageState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("failed to write image state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to write image state: %w", err)
	}
	return nil
}
