package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure the lab storage of one cluster.
type Options struct {
	// Cluster is the lab cluster's name, used in logs.
	Cluster string
	// DataDir holds the volumes, one directory each under volumes/, and the image states.
	DataDir string
	// PeerDataDir is the peer cluster's DataDir, the target of mirroring. Empty: no peer.
	PeerDataDir string
	// Drivers are the CSI driver names this storage serves.
	Drivers []string
	// PartitionFlags are files, one per cluster, of which any existing cuts this storage off
	// from its peer (the lab's network partition): the peer is then unreachable.
	PartitionFlags []string
	// MultiClusterFlag is a file, shared by both clusters, whose existence joins them in the
	// lab's multi-cluster network (internal/lab/storage/volsync/serviceexport.go): ServiceExports
	// are exported and clusterset addresses resolve. Empty: never.
	MultiClusterFlag string
	// CopyFreeze is how a copy of a volume (CopyVolume: a mirror, a snapshot, VolSync's source
	// copy) keeps the volume's users from writing during it: CopyFreezeProcesses (the default)
	// or CopyFreezeNone, which tears a copy that a process writes into while it runs.
	CopyFreeze CopyFreezeMode
	// CopyPacing is slept before every file a copy of a volume copies, so that a copy takes as
	// long as a real volume's (seconds) and a torn copy shows; zero does not pace.
	CopyPacing time.Duration
}

const (
	// CopyFreezeEnv sets `drover lab storage-controller --copy-freeze` when the flag is not
	// given; the lab's processes inherit the environment of the command or test that starts it.
	CopyFreezeEnv = "DROVER_LAB_COPY_FREEZE"
	// CopyPacingEnv sets `drover lab storage-controller --copy-pacing` ("5ms") likewise.
	CopyPacingEnv = "DROVER_LAB_COPY_PACING"
)

// CopyFreezeMode says what a copy of a volume stops while it runs.
type CopyFreezeMode string

const (
	// CopyFreezeProcesses stops every process that uses the volume (internal/lab/freeze).
	CopyFreezeProcesses CopyFreezeMode = "processes"
	// CopyFreezeNone stops none: the lab's own writer is still held off by the image lock, a
	// process is not.
	CopyFreezeNone CopyFreezeMode = "none"
)

// ParseCopyFreeze reads a CopyFreezeMode; empty is the default, CopyFreezeProcesses.
func ParseCopyFreeze(s string) (CopyFreezeMode, error) {
	switch m := CopyFreezeMode(s); m {
	case "":
		return CopyFreezeProcesses, nil
	case CopyFreezeProcesses, CopyFreezeNone:
		return m, nil
	}
	return "", fmt.Errorf("copy freeze %q is not one of %q, %q", s, CopyFreezeProcesses, CopyFreezeNone)
}

const (
	// Poll is how often a VolSync destination looks for transfers and a source for its ack.
	Poll = 500 * time.Millisecond
	// Retry is how long a controller waits before retrying what failed.
	Retry = 2 * time.Second
	// Idle is the safety requeue of a controller waiting for something only a person changes
	// (a new manual trigger, a PVC of another storage).
	Idle = time.Minute
	// Workers copy that many volumes at once (one object is never reconciled twice at once): a
	// workload's PVCs replicate side by side, as their movers would.
	Workers = 4
)

// Store holds the lab storage's dependencies, shared by its controllers; per-request state
// lives in the functions.
type Store struct {
	Client client.Client
	// Reader reads from the API server, past the cache, where a stale read would act twice.
	Reader client.Reader
	Opts   Options
	Images *Images
}

// Ours reports whether this storage serves the CSI driver.
func (s *Store) Ours(driver string) bool { return slices.Contains(s.Opts.Drivers, driver) }

// ReconcilerFunc is a reconcile function as a controller-runtime Reconciler.
type ReconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

// Reconcile calls f.
func (f ReconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// CopySettings override Options.CopyFreeze and Options.CopyPacing of a running storage, so that
// a test switches the freeze off and on, or paces the copies, in a lab it started once: written
// to CopySettingsPath of the storage's data directory (WriteCopySettings), read at every copy,
// removed (ClearCopySettings) to return to the options.
type CopySettings struct {
	// Freeze replaces Options.CopyFreeze; empty keeps it.
	Freeze CopyFreezeMode `json:"freeze,omitempty"`
	// Pacing replaces Options.CopyPacing, in nanoseconds in the file; zero keeps it.
	Pacing time.Duration `json:"pacing,omitempty"`
}

// CopySettingsPath is the file of a storage's CopySettings.
func CopySettingsPath(dataDir string) string { return filepath.Join(dataDir, "copy-settings.json") }

// WriteCopySettings overrides the copy options of the storage with data directory dataDir, from
// its next copy on.
func WriteCopySettings(dataDir string, cs CopySettings) error {
	if _, err := ParseCopyFreeze(string(cs.Freeze)); err != nil {
		return err
	}
	if cs.Pacing < 0 {
		return fmt.Errorf("copy pacing %s is negative", cs.Pacing)
	}
	return WriteJSON(CopySettingsPath(dataDir), cs)
}

// ClearCopySettings returns the storage's copies to its options.
func ClearCopySettings(dataDir string) error {
	if err := os.Remove(CopySettingsPath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove copy settings of %s: %w", dataDir, err)
	}
	return nil
}

// copySettings are the copy options in force: the options, overridden by the settings file.
func (s *Store) copySettings() (CopySettings, error) {
	cs := CopySettings{Freeze: s.Opts.CopyFreeze, Pacing: s.Opts.CopyPacing}
	var file CopySettings
	err := ReadJSON(CopySettingsPath(s.Opts.DataDir), &file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return cs, nil
	case err != nil:
		return cs, fmt.Errorf("failed to read copy settings: %w", err)
	}
	if file.Freeze != "" {
		cs.Freeze = file.Freeze
	}
	if file.Pacing > 0 {
		cs.Pacing = file.Pacing
	}
	return cs, nil
}
