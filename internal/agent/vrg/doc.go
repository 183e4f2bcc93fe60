// Package vrg is the agent's VolumeReplicationGroup reconciler. It owns, on its managed cluster,
// everything that protects the selected PVCs of one application:
//
//   - the PVCs' protection marks: finalizer drover.io/vrg-protection and labels
//     drover.io/protected-by=<group name> and drover.io/protected-by-namespace=<group namespace>
//     (a PVC labelled before the second label existed is read by its name alone, and labelled at
//     the group's next reconcile);
//   - their PVs' reclaim policy, set to Retain while protected, the original kept in the PV
//     annotation drover.io/original-reclaim-policy so unprotecting can restore it;
//   - each PVC's replication, through the backend its StorageClass selects (internal/replication);
//   - the PV and PVC metadata, cleaned of everything specific to this cluster, in every S3
//     profile of the group, under <group namespace>/<group name>/;
//   - on promotion (primary with action Failover or Relocate), the restore of the group's PVs and
//     PVCs from the first readable S3 profile, adopting matching leftovers and reporting, never
//     overwriting, colliding ones (promote.go), after checking what the store holds: PVCs only
//     in the protected namespaces, PVs only CSI of the group's classes with their secrets from
//     the StorageClass (restorecheck.go), every read bounded (limits.go); a PVC of a class that
//     binds on its first consumer counts as restored while Pending, its image held until it is
//     Bound (firstconsumer.go);
//   - the consistency groups of spec.consistencyGroups (groups.go): each member labelled
//     drover.io/consistency-group=<group label> and replicated only as a member (the VolRep
//     backend's one VolumeGroupReplication per group), the storage's group handle recorded on
//     the members for the peer's promotion, a group the storage cannot keep refused with reason
//     ConsistencyGroupUnsupported, and status.consistencyGroups;
//   - who each VolSync PVC's movers run as: the group's user, else the pods' that mount it, else
//     what it recorded (volsync_identity.go);
//   - on demotion (secondary), the consumer checks (pods and VolumeAttachments, through field
//     indexes) and the demotion of each PVC's replication (demote.go, consumers.go);
//   - the application's hooks from the recipe the hub copies into spec.recipe (hooks.go, run by
//     internal/agent/hooks): a relocation's source runs its BeforeSync and BeforeStop hooks
//     before anything stops its workload, and stops the recipe's groups in reverse, each after
//     its own BeforeStop hooks (stoporder.go); a promoted target restores its objects in the
//     recipe's order, with its AfterRestore hooks and each group's AfterReady hooks between the
//     steps (order.go), and runs its other AfterReady hooks once its workloads are Ready; their
//     runs in status.hooks, a failed one holding DataReady (source), KubeObjectsReady (the
//     restore order) or WorkloadsReady (target) at HookFailed until a person's decision;
//   - the group's status: per-PVC conditions and sync times, DataReady, DataProtected,
//     ClusterDataReady, ClusterDataProtected, lastGroupSyncTime (the oldest PVC sync or, with
//     no PVC selected, the last capture of the objects that every store holds) and state.
//
// It protects with both backends (VolRep: a VolumeReplication per PVC, or one
// VolumeGroupReplication per consistency group; VolSync: a ReplicationSource per PVC, its
// destination on the secondary), releases a protected PVC its owner deletes, captures and
// restores the namespace's objects, promotes with restore and adoption, demotes after a failover
// (with resync) and for a relocation (the fence, then the final sync), and unprotects when the
// group is deleted (replication removed, reclaim policies restored, marks removed, metadata
// deleted; the PVCs and their data stay).
//
// The reconciler follows STYLE.md: get → finalizer → scope → deferred status patch → phases.
// Everything of one request lives in the scope; the Reconciler holds only dependencies, besides
// the ledger of what the stores hold and the hooks that run in goroutines (hooks.go).
//
// Tests: the unit tests sit beside the code (package vrg); the lab tests, against a lab's real
// API servers with an agent in-process on east and west, are package vrg_test here and, for the
// VolSync backend, package volsynclab_test in volsynclab/, each package with a lab of its own so
// both run at once; their one harness is vrglab/.
package vrg
