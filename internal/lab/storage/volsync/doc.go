// Package volsync is the lab's VolSync: the rsync-over-TLS ReplicationSource and
// ReplicationDestination of backube/volsync (volsync.backube/v1alpha1) for the lab storage's
// volumes, their movers replaced by file copies between the two clusters' data directories, and
// the multi-cluster network's ServiceExports that make a destination reachable from the peer.
// The comment at the top of volsync.go tells the whole contract.
//
//   - volsync.go: the controllers, the listener and transfer files, the phases of a reconcile
//     and the Synchronizing condition.
//   - destination.go: a ReplicationDestination: its PVC and key Secret, its published address,
//     accepting transfers, its image (a VolumeSnapshot, latestImage) and the clean-up of older
//     ones.
//   - source.go: a ReplicationSource: VolSync's trigger state machine, the handshake, sending a
//     sync and completing it.
//   - rsync.go: the copy, file by file in place, as rsync-tls writes.
//   - mover.go: the destination's mover Job as VolSync builds it, and its pod's state.
//   - identity.go: who a mover runs as, whether Pod Security admits it, the source's mover.
//   - address.go: a destination's address by Service type.
//   - serviceexport.go: the multi-cluster network, a stand-in for a Multi-Cluster Services
//     implementation (KEP-1645).
//
// It models these files of backube/volsync: internal/controller/statemachine/machine.go (the
// trigger state machine), internal/controller/mover/rsynctls/mover.go and
// mover-rsync-tls/client.sh and server.sh (the movers and their completion),
// internal/controller/volumehandler/volumehandler.go (the destination's image),
// internal/controller/utils/cleanup.go (older images and do-not-delete),
// internal/controller/utils/utils.go (Service names), and docs/usage/permissionmodel.rst (who
// movers run as).
//
// The storage controller (internal/lab/storage) registers it with Setup; it works on the shared
// driver context (internal/lab/storage/driver).
package volsync
