// Package storage is the lab's storage: CSI-like drivers whose volumes are directories on this
// machine, with the replication semantics drover drives in production.
//
//   - storage.go: provisions a PV for each PVC of its storage classes (from a VolumeSnapshot data
//     source when one is named), deletes released volumes, marks VolumeAttachments attached;
//     binding.go: a PVC of a WaitForFirstConsumer class only once a pod using it is scheduled.
//   - images.go: image state beside each volume (role, epoch, resync, last mirror), the peer's
//     reachability (its storage process runs and no lab partition flag cuts it off),
//     point-in-time copies and atomic replacement.
//   - volrep*.go: csi-addons VolumeReplication as the csi-addons controller drives ceph-csi
//     (RBD snapshot mirroring): forced promotion, csi-addons' own conditions, the PVC's
//     pvc-protection finalizer and annotation; the status written only at csi-addons' cadence
//     (volrep_report.go); a deletion that releases a secondary only while it replays and
//     deletes the peer's copy of a primary (volrep_delete.go).
//   - volsync*.go, snapshot.go: VolSync rsyncTLS ReplicationSource/Destination and
//     VolumeSnapshots; destination addresses by Service type (volsync_address.go); who movers run
//     as and whether Pod Security admits them (volsync_identity.go).
//   - serviceexport.go: the multi-cluster network, a stand-in for a Multi-Cluster Services
//     implementation: ServiceExports marked Valid and Ready, their clusterset addresses
//     resolved from the peer, only while the lab's flag says the network is on.
//   - writer.go: workload writers that append checksummed records for pods labelled
//     lab.drover.io/writer=true, refused on secondary images.
//
// It runs as `drover lab storage-controller`, one process per managed cluster, started and
// stopped with that cluster. It is lab code: production packages never import it.
package storage
