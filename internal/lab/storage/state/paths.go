package state

import "path/filepath"

// The directories of a storage data directory.
const (
	volumesDir   = "volumes"
	imagesDir    = "images"
	snapshotsDir = "snapshots"
)

// Dirs are the directories a storage data directory holds.
func Dirs(dataDir string) []string {
	return []string{filepath.Join(dataDir, volumesDir), filepath.Join(dataDir, imagesDir), filepath.Join(dataDir, snapshotsDir)}
}

// VolumePath is where the data of the volume with handle lives under a cluster's data dir.
func VolumePath(dataDir, handle string) string {
	return filepath.Join(dataDir, volumesDir, handle)
}

// SnapshotPath is where the data of the snapshot with handle lives under a cluster's data dir.
func SnapshotPath(dataDir, handle string) string {
	return filepath.Join(dataDir, snapshotsDir, handle)
}

// ImagePath is the file of the replication state of the image with handle (a mirrored image has
// the same handle on both clusters).
func ImagePath(dataDir, handle string) string {
	return filepath.Join(dataDir, imagesDir, handle+".json")
}
