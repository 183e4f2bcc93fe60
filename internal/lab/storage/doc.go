// Package storage is the lab's storage: CSI-like drivers whose volumes are directories on this
// machine, with the replication semantics drover drives in production. Its folders, one per
// upstream project it stands in for, around a shared driver context:
//
//   - csi/: the CSI side: provisioner, deleter, attacher, WaitForFirstConsumer binding, snapshots.
//   - csiaddons/: csi-addons with ceph-csi's RBD snapshot mirroring: VolumeReplication, and
//     VolumeGroupReplication for consistency groups (with their Content and Class).
//   - volsync/: VolSync: rsyncTLS sources and destinations, their movers, ServiceExports.
//   - driver/: the shared driver context: the Store, images on disk, peer reachability, waits.
//   - state/: the on-disk state (volume, snapshot, image paths; image state), a leaf package.
//   - storagetest/: the fixtures the tests of these packages share.
//
// This folder runs them all (storage.go, Run) and holds the lab's own part:
//
//   - writer.go: workload writers (internal/lab/writer, run as goroutines here) that commit
//     checksummed records for pods labelled lab.drover.io/writer=true, refused on secondary
//     images; a pod that runs `drover lab writer` itself needs none of them.
//   - images.go, csiaddons_exports.go, volsync_exports.go: the names of driver/, state/,
//     csiaddons/ and volsync/ that drover's lab tests use through this package.
//
// It runs as `drover lab storage-controller`, one process per managed cluster, started and
// stopped with that cluster. It is lab code: production packages never import it.
package storage
