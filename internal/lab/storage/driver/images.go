package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// Images is one cluster's lab storage on disk, with its peer's for mirroring. The peer's
// storage is another managed cluster's data directory on the same machine; it is reachable
// only while that cluster's storage controller runs.
type Images struct {
	dir     string
	peerDir string

	// partitionFlags are files of which any existing cuts the peer off (SetPartitionFlags).
	partitionFlags []string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	alive *os.File
	// peerPID is the peer's storage controller as last found; under mu.
	peerPID int
}

// SetPartitionFlags names the lab's partition flags of this cluster and its peer: while any of
// them exists, the peer is unreachable though its storage runs, in both directions (a network
// partition between the clusters). Call it before the storage runs.
func (im *Images) SetPartitionFlags(paths ...string) { im.partitionFlags = paths }

// partitioned reports whether a partition flag exists.
func (im *Images) partitioned() bool {
	for _, p := range im.partitionFlags {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// NewImages opens the storage in dir with its peer in peerDir (empty: no peer).
func NewImages(dir, peerDir string) (*Images, error) {
	for _, d := range state.Dirs(dir) {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	return &Images{dir: dir, peerDir: peerDir, locks: map[string]*sync.Mutex{}}, nil
}

// MarkAlive holds the storage's liveness lock until the process exits. A peer that can take
// the lock knows this storage is down (its cluster is stopped).
func (im *Images) MarkAlive() error {
	f, err := os.OpenFile(filepath.Join(im.dir, ".alive"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("failed to open liveness lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return fmt.Errorf("another lab storage controller runs on %s: %w", im.dir, err)
	}
	im.alive = f
	return nil
}

// PeerReachable reports whether the peer's storage controller runs and no partition cuts it
// off: no partition flag exists, and a live process (not a zombie) names the peer's data
// directory as its own. This is exact and
// immediate: the moment `drover lab stop` ends the peer's process, the peer is unreachable.
// (A liveness flock was tried first; probing it from here raced with the peer taking it at
// its start, and a probe that took the lock made the peer look down.)
func (im *Images) PeerReachable() bool {
	if im.peerDir == "" || im.partitioned() {
		return false
	}
	want := "--data-dir=" + im.peerDir
	isPeer := func(p process.Proc) bool {
		return slices.Contains(p.Args[1:], want) && strings.Contains(strings.Join(p.Args, "\x00"), "storage-controller") && process.Alive(p.PID)
	}
	// The process found last is looked at first: every reconcile asks, and a scan of every
	// process's command line was a large part of the storage's CPU. A PID reused by another
	// process fails the same test and leads to a scan.
	im.mu.Lock()
	last := im.peerPID
	im.mu.Unlock()
	if last > 0 {
		if p, ok := process.Get(last); ok && isPeer(p) {
			return true
		}
	}
	found, err := process.Find(isPeer)
	if err != nil || len(found) == 0 {
		return false
	}
	im.mu.Lock()
	im.peerPID = found[0].PID
	im.mu.Unlock()
	return true
}

// Lock serialises access to one image within this process: writers and the mirror's
// point-in-time copy take it, so a mirror never sees half a record.
func (im *Images) Lock(handle string) func() {
	im.mu.Lock()
	l, ok := im.locks[handle]
	if !ok {
		l = &sync.Mutex{}
		im.locks[handle] = l
	}
	im.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// VolumeDir is the directory holding the image's data.
func (im *Images) VolumeDir(handle string) string { return state.VolumePath(im.dir, handle) }

// PeerVolumeDir is the directory holding the peer's copy of the image.
func (im *Images) PeerVolumeDir(handle string) string { return state.VolumePath(im.peerDir, handle) }

// State reads the image's state; an image never replicated has the zero state.
func (im *Images) State(handle string) (state.ImageState, error) {
	return state.Read(state.ImagePath(im.dir, handle))
}

// PeerState reads the peer's state of the image.
func (im *Images) PeerState(handle string) (state.ImageState, error) {
	return state.Read(state.ImagePath(im.peerDir, handle))
}

// SetState writes the image's state atomically.
func (im *Images) SetState(handle string, st state.ImageState) error {
	return state.Write(state.ImagePath(im.dir, handle), st)
}

// SetPeerState writes the peer's state of the image atomically.
func (im *Images) SetPeerState(handle string, st state.ImageState) error {
	return state.Write(state.ImagePath(im.peerDir, handle), st)
}

// UpdateState changes the image's state by read-modify-write under a file lock, so this
// process and the peer's (which writes the state when it mirrors) never lose each other's
// changes.
func (im *Images) UpdateState(handle string, change func(*state.ImageState)) (state.ImageState, error) {
	return state.Update(state.ImagePath(im.dir, handle), change)
}

// UpdatePeerState changes the peer's state of the image like UpdateState.
func (im *Images) UpdatePeerState(handle string, change func(*state.ImageState)) (state.ImageState, error) {
	return state.Update(state.ImagePath(im.peerDir, handle), change)
}

// ReplaceDir makes dst hold exactly what staged holds, by renames on one file system, so a
// reader sees the old or the new content and never a mix. staged is consumed.
func ReplaceDir(staged, dst string) error {
	old := fmt.Sprintf("%s.old-%d", dst, time.Now().UnixNano())
	if err := os.Rename(dst, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to move %s aside: %w", dst, err)
	}
	if err := os.Rename(staged, dst); err != nil {
		return fmt.Errorf("failed to move %s into place: %w", staged, err)
	}
	return os.RemoveAll(old)
}
