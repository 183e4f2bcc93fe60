package csiaddons

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A demotion whose report is lost. csi-addons demotes a volume and writes the VolumeReplication's
// status in two steps (csi-addons/kubernetes-csi-addons d4d7fea4,
// internal/controller/replication.storage/volumereplication_controller.go, Reconcile:
// markVolumeAsSecondary, then updateReplicationStatus, a Status().Update that fails on a
// conflict or an API server that does not answer). When the write fails the reconcile returns
// the error and is retried with the controller's backoff: the image is already demoted, and
// whatever the storage does to it meanwhile (rbd-mirror deleting a non-primary image whose
// primary's mirroring was disabled) comes before any Secondary report. The next reconcile
// demotes again and reports what ceph-csi answers then.
//
// The lab makes that happen on demand: while the file LoseDemotionReportsPath exists in a
// storage's data directory, every reconcile that demotes an image writes no status, as if the
// write had failed; the next one reports as usual.

// LoseDemotionReportsPath is the file whose existence makes the storage with data directory
// dataDir lose the status write of every reconcile that demotes an image.
func LoseDemotionReportsPath(dataDir string) string {
	return filepath.Join(dataDir, "lose-demotion-reports")
}

// LoseDemotionReports makes the storage with data directory dataDir lose (on) or write (off)
// the status of the reconciles that demote an image, from its next reconcile on.
func LoseDemotionReports(dataDir string, on bool) error {
	path := LoseDemotionReportsPath(dataDir)
	if on {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", path, err)
		}
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove %s: %w", path, err)
	}
	return nil
}

// losesDemotionReports reports whether this storage loses the status write of a demotion now.
func (s *store) losesDemotionReports() bool {
	_, err := os.Stat(LoseDemotionReportsPath(s.Opts.DataDir))
	return err == nil
}
