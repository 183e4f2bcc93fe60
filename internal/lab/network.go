package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The lab's multi-cluster network: the stand-in for a Multi-Cluster Services implementation
// (Submariner, a cloud's) joining east and west in one clusterset. While it is on, the flag file
// MultiClusterFlag exists and both clusters' lab storage exports ServiceExports and resolves
// clusterset addresses (internal/lab/storage/volsync/serviceexport.go); while it is off, the
// ServiceExport CRD is served but nothing marks an export and no clusterset address resolves.
// Options.MultiClusterNetwork turns it on (`drover lab up --multicluster-network`); the lab
// records it in lab.json, so later starts keep it, and SetMultiClusterNetwork turns it on or off
// while the lab runs.

// multiClusterFlagFile, in the lab directory, exists while the multi-cluster network is on.
const multiClusterFlagFile = "multicluster-network"

// MultiClusterFlag is the file whose existence joins the managed clusters in the multi-cluster
// network.
func (l *Lab) MultiClusterFlag() string { return filepath.Join(l.opts.Dir, multiClusterFlagFile) }

// MultiClusterNetwork reports whether the multi-cluster network is on.
func (l *Lab) MultiClusterNetwork() bool { return l.opts.MultiClusterNetwork }

// SetMultiClusterNetwork turns the multi-cluster network on or off, at once for the running
// clusters, and records it.
func (l *Lab) SetMultiClusterNetwork(on bool) error {
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	l.opts.MultiClusterNetwork = on
	return l.writeState()
}

// applyMultiClusterNetwork makes the flag file say what the options say.
func (l *Lab) applyMultiClusterNetwork() error {
	flag := l.MultiClusterFlag()
	if !l.opts.MultiClusterNetwork {
		if err := os.Remove(flag); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove the multi-cluster network flag %s: %w", flag, err)
		}
		return nil
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		return fmt.Errorf("failed to write the multi-cluster network flag %s: %w", flag, err)
	}
	return nil
}
