package state

import "path/filepath"

// The directories of a storage data directory.
const (
	volumesDir   = "volumes"
	imagesDir    = "images"
	snapshotsDir = "snapshots"
	groupsDir    = "groups"
)

// Dirs are the directories a storage data directory holds.
func Dirs(dataDir string) []string {
	return []string{filepath.Join(dataDir, volumesDir), filepath.Join(dataDir, imagesDir), filepath.Join(dataDir, snapshotsDir), filepath.Join(dataDir, groupsDir)}
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

// GroupPath is the file of the replication state of the volume group with handle (a consistency
// group: its role, epoch and last common sync, which its member images follow).
func GroupPath(dataDir, handle string) string {
	return filepath.Join(dataDir, groupsDir, handle+".json")
}

// GroupIntentPath is the intent record of a group mirror being applied to the group with handle
// in a cluster's data dir: while it exists, the members it names are being replaced by the copies
// it names, and whoever finds it completes the replacement before the group is read.
func GroupIntentPath(dataDir, handle string) string {
	return filepath.Join(dataDir, groupsDir, handle+".intent.json")
}

// GroupStagingPrefix is the name prefix, in the volumes directory of a cluster's data dir, of the
// staged copies of a group mirror to the group with handle.
func GroupStagingPrefix(dataDir, handle string) string {
	return filepath.Join(dataDir, volumesDir, ".incoming-group-"+handle+"-")
}
