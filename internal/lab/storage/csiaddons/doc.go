// Package csiaddons is the lab's csi-addons: the VolumeReplication controller
// (replication.storage.openshift.io/v1alpha1) as csi-addons drives ceph-csi's RBD snapshot
// mirroring, for the lab storage's volumes. The comment at the top of volrep.go tells the whole
// contract.
//
//   - volrep.go: the controller: promotion (forced when ceph-csi refuses), demotion with a final
//     mirror, resync, mirroring at the class's scheduling interval, split brain.
//   - volrep_status.go: the conditions, as the csi-addons controller sets them.
//   - volrep_report.go: the status written only at csi-addons' cadence.
//   - volrep_pvc.go: the PVC's pvc-protection finalizer and volume-replication-name annotation.
//   - volrep_delete.go: a deletion that releases a secondary only while it replays and deletes
//     the peer's copy of a primary.
//
// It models these files of csi-addons/kubernetes-csi-addons:
// internal/controller/replication.storage/volumereplication_controller.go, status.go,
// finalizers.go and pvc.go; and of ceph/ceph-csi: internal/csi-addons/rbd/replication.go and
// internal/rbd/replication.go.
//
// The storage controller (internal/lab/storage) registers it with Setup; it works on the shared
// driver context (internal/lab/storage/driver) and the image state (internal/lab/storage/state).
package csiaddons
