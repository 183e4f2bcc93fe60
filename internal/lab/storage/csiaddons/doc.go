// Package csiaddons is the lab's csi-addons: the VolumeReplication controller
// (replication.storage.openshift.io/v1alpha1) as csi-addons drives ceph-csi's RBD snapshot
// mirroring, for the lab storage's volumes, and the VolumeGroupReplication controllers that make
// a consistency group of several volumes, replicated from one instant. The comments at the top of
// volrep.go and volgroup.go tell the whole contract.
//
//   - volrep.go: the controller: promotion (forced when ceph-csi refuses), demotion with a final
//     mirror, resync, mirroring at the class's scheduling interval, split brain.
//   - volrep_status.go: the conditions, as the csi-addons controller sets them.
//   - volrep_report.go: the status written only at csi-addons' cadence.
//   - volrep_pvc.go: the PVC's pvc-protection finalizer and volume-replication-name annotation.
//   - volrep_delete.go: a deletion that releases a secondary only while it replays and deletes
//     the peer's copy of a primary.
//   - volrep_image.go: what the VolumeReplication model drives, an image: one volume's, or a
//     group's (volgroup_image.go), promoted, demoted, resynced and mirrored as one.
//   - volgroup.go: the VolumeGroupReplication controller: members by label, their vgr-protection
//     finalizer, the content, the group's VolumeReplication; volgroup_pvc.go, the members' marks;
//     volgroup_content.go, the VolumeGroupReplicationContent controller (the storage's group);
//     volgroup_delete.go, the group's VolumeReplication and the deletion of a group.
//   - volgroup_mirror.go: a group's mirror, every member copied at one instant and applied on the
//     peer as one through an intent record; volgroup_cut.go, the lab's knob that cuts a group
//     transfer half-way.
//
// It models these files of csi-addons/kubernetes-csi-addons:
// internal/controller/replication.storage/volumereplication_controller.go,
// volumegroupreplication_controller.go, volumegroupreplicationcontent_controller.go, status.go,
// finalizers.go and pvc.go; and of ceph/ceph-csi: internal/csi-addons/rbd/replication.go,
// internal/rbd/replication.go and (at 0dad1762) internal/rbd/group/group_mirror.go.
//
// The storage controller (internal/lab/storage) registers it with Setup; it works on the shared
// driver context (internal/lab/storage/driver) and the image state (internal/lab/storage/state).
package csiaddons
