// Package volrep is the replication backend over csi-addons VolumeReplication: one
// VolumeReplication per PVC, named like the PVC, in its namespace, and the storage (for example
// Ceph RBD mirroring) moves the data. It chooses the VolumeReplicationClass whose provisioner is
// the PV's CSI driver and whose schedulingInterval parameter is the VolumeReplicationGroup's
// interval, optionally narrowed by spec.volRep.replicationClassSelector.
//
// A PVC of a consistency group (replication.PVCContext.Group) is replicated only as a member of
// its group: one VolumeGroupReplication per group, <group>-<name>, selecting the members by
// v1alpha1.LabelConsistencyGroup, with the one VolumeGroupReplicationClass of their provisioner
// (group.go). A promotion on the peer restores the group's VolumeGroupReplicationContent under
// the storage's handle the PVC carries (v1alpha1.AnnotationConsistencyGroupHandle).
//
// The VolumeReplications are labelled with their VolumeReplicationGroup's namespace and name
// rather than owned by it: the group may protect PVCs of other namespaces (owner references
// cannot cross namespaces), and a VolumeReplication must never be garbage-collected behind the
// agent's back, since deleting one turns a mirrored image into an ordinary volume. The agent
// removes them itself when it unprotects.
package volrep
