// Package driver is the lab storage's shared driver context: what every controller of the lab's
// CSI-like drivers works with, whichever upstream project it stands in for.
//
//   - driver.go: Options, the Store every controller is a method set on (API client and reader,
//     options, images) and the storage's timing (poll, retry, workers).
//   - images.go: the images on disk, the peer's reachability (its storage process runs and no
//     lab partition flag cuts it off), point-in-time copies and atomic replacement.
//   - wait.go: a precondition not met yet, reported in a status and retried.
//   - volumes.go: the lab PV bound to a PVC, and the directory of a PV's volume for a consumer
//     outside the storage (PVVolume: the lab kubelet mounting a PVC).
//   - files.go: JSON state files written atomically, scratch directories.
//
// The on-disk layout itself is internal/lab/storage/state.
package driver
