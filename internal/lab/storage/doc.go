// Package storage is the lab's storage: CSI-like drivers whose volumes are directories on this
// machine, with the replication semantics drover drives in production. Its folders, one per
// upstream project it stands in for, around a shared driver context:
//
//   - driver/: the shared driver context: the Store every controller works on, the images on
//     disk, the peer's reachability, point-in-time copies, waits.
//   - state/: the on-disk state (volume, snapshot and image paths, image state), a leaf package.
//   - csiaddons/: csi-addons (csi-addons/kubernetes-csi-addons with ceph-csi's RBD mirroring):
//     VolumeReplication.
//   - volsync/: VolSync (backube/volsync): rsyncTLS ReplicationSources and Destinations, their
//     movers, and the multi-cluster network's ServiceExports.
//   - storagetest/: the fixtures its packages' tests share.
//
// This folder runs them all (storage.go, Run) and holds, until it moves into a folder of its own,
// the CSI side:
//
//   - storage.go: provisions a PV for each PVC of its storage classes (from a VolumeSnapshot data
//     source when one is named), deletes released volumes, marks VolumeAttachments attached;
//     binding.go: a PVC of a WaitForFirstConsumer class only once a pod using it is scheduled.
//   - snapshot.go, snapshot_static.go: VolumeSnapshots and pre-provisioned snapshot contents.
//   - writer.go: workload writers that append checksummed records for pods labelled
//     lab.drover.io/writer=true, refused on secondary images.
//   - images.go, csiaddons_exports.go, volsync_exports.go: the names of driver/, state/,
//     csiaddons/ and volsync/ that drover's lab tests use through this package.
//
// It runs as `drover lab storage-controller`, one process per managed cluster, started and
// stopped with that cluster. It is lab code: production packages never import it.
package storage
