// Package volsync is the replication backend over VolSync's rsync-tls mover, for storage that
// has no mirroring of its own: a ReplicationSource per PVC on the primary sends a snapshot of the
// volume to a ReplicationDestination per PVC on the secondary, which keeps the latest received
// image as a VolumeSnapshot (status.latestImage). Promotion restores the PVC from that snapshot,
// never from the destination's volume, which rsync-tls writes in place and a cut sync leaves
// mixed (PauseDestination stops the destination first; a kept PVC received into is marked
// AnnotationReceivedBy, so the agent knows it for VolSync's replica and replaces it).
//
// # Names
//
// Every object is derived from the PVC and its VolumeReplicationGroup, so both clusters, the hub
// and a person can find it without a lookup:
//   - the ReplicationSource and the ReplicationDestination are named like the PVC, in its
//     namespace (two kinds, so one name);
//   - the rsync-tls key Secret is KeySecretName(group, PVC), in the PVC's namespace, holding
//     psk.txt = "volsync:<64 hex digits>". The secondary's agent creates it once (random) and
//     reuses it when it exists; the agents pass it to the primary through the group's stores
//     (internal/agent/vrg, volsync_keys.go), so the name and the key stay the same whichever
//     cluster is secondary;
//   - the DR-owned PVC of a relocation's final sync from a deleted PVC is FinalSyncPVCName(PVC).
//
// # What the hub must copy (the contract with the hub)
//
// Secondary → primary, for every PVC of backend VolSync:
//   - status.volSyncDestinations[] of the secondary's group → spec.volSync.destinations[] of the
//     primary's group (pvcNamespace, pvcName, address, keySecretName), as they are. The key
//     Secret itself is not the hub's to copy: the agents pass it through the group's stores.
//
// Primary → secondary:
//   - every status.protectedPVCs[] entry of the primary's group whose backend is VolSync →
//     spec.volSync.receivePVCs[] of the secondary's group (pvcNamespace ← namespace, pvcName ←
//     name, storageClassName, accessModes, capacity, volumeMode: a Block PVC is received as
//     Block; moverSecurityContext: the destination's mover runs as the primary's).
//
// # Who the movers run as
//
// Every source and destination gets a moverSecurityContext (movers.go): the PVC's user as the
// agent resolved it (PVCContext.MoverSecurityContext; a destination takes the group's, else the
// primary's from receivePVCs) with runAsNonRoot and the RuntimeDefault seccomp profile, or for
// privileged movers the profile only. Without a user an unprivileged mover would run as root with
// no capability, which rsync cannot, so Protect and EnsureDestination make none and return Retry
// with reason VolSyncMoverUserUnknown, saying what to set.
//
// The address is how the peer reaches the destination (address.go, spec.volSync.address): the
// LoadBalancer Service's address VolSync publishes, or with ServiceExport the clusterset address
// of its exported ClusterIP Service. A secondary reports no address the peer cannot use: the
// destination waits, with reason VolSyncAddressUnreachable saying which setting to choose.
//
// Until a destination and its key are on the primary, Protect returns Retry with reason
// VolSyncDestinationUnknown; that is the normal state of a primary right after a failover while
// the peer is down.
//
// # The order of a relocation
//
// A PVC that the workload deletes while its group is still primary is released as a
// scale-down: its source is removed and its PV's reclaim policy restored. So the hub asks the
// old primary for the relocation (replicationState secondary, action Relocate,
// finalSyncRequest) and removes the workload only once its agent acted on it (the group carries
// the annotation drover.io/fence=relocate, or a PVC's DataReady says PVCInUse); a PVC the
// workload deletes from then on keeps its data for the final sync, which runs from a DR-owned
// PVC. A source removed anyway is recreated for the final sync while the destination is known.
//
// The final sync itself (finalsync.go) sets three manual triggers in turn, <request>-drain,
// <request>-final and <request>-confirm: VolSync records a manual trigger when whatever sync was
// running completes, so only a sync asked once the first trigger was recorded is known to have
// started after the workload stopped; and a source records a sync before the destination has
// its image, so only the completion of one more sync proves that the destination recorded the
// final sync's image.
//
// # Recovery point
//
// Status reports the start of the last completed sync (lastSyncTime − lastSyncDuration), not
// lastSyncStartTime, which VolSync clears when a sync completes.
//
// The objects are labelled with their group (LabelVRGName, LabelVRGNamespace), not owned by
// it, like volrep's: a group may protect PVCs of other namespaces.
package volsync
