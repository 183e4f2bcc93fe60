// Package driver is the lab storage's shared driver context: what every controller of the lab's
// CSI-like drivers works with, whichever upstream project it stands in for.
//
//   - driver.go: Options (the copies' freeze and pacing among them, overridden in a running
//     storage by its CopySettings file), the Store every controller is a method set on (API
//     client and reader, options, images) and the storage's timing (poll, retry, workers).
//   - images.go: the images on disk, the peer's reachability (its storage process runs and no
//     lab partition flag cuts it off), the image lock and atomic replacement.
//   - copy.go: CopyTree, a copy of a tree as `cp -a` makes it (owners, modes, links, times).
//   - wait.go: a precondition not met yet, reported in a status and retried.
//   - volumes.go: the lab PV bound to a PVC; the directory of a PV's volume for a consumer
//     outside the storage (PVVolume: the lab kubelet mounting a PVC); CopyVolume, every copy of a
//     volume (a mirror, a snapshot, VolSync's source copy) taken at one instant with its users
//     frozen (internal/lab/freeze) and paced by Options.CopyPacing; CopyVolumes, the copies of a
//     consistency group's volumes, all at one instant.
//   - files.go: JSON state files written atomically, scratch directories.
//
// The on-disk layout itself is internal/lab/storage/state.
package driver
