package v1alpha1

// Condition types. Every condition is a metav1.Condition whose observedGeneration says which
// spec it judged.
const (
	// ConditionValidated (DRCluster, DRPolicy, DRPlacementControl) is True when the spec and
	// everything it refers to are usable.
	ConditionValidated = "Validated"
	// ConditionReachable (DRCluster) is True while the hub's health probe of the cluster
	// succeeds. It turns False only after the probe has failed for a grace period.
	ConditionReachable = "Reachable"
	// ConditionFenced (DRCluster) is True while drover treats the cluster as lost: nothing there
	// may be primary until it is reachable again and its groups are demoted.
	ConditionFenced = "Fenced"

	// ConditionAvailable (DRPlacementControl) is True when the application runs, protected, on
	// the cluster the spec asks for.
	ConditionAvailable = "Available"
	// ConditionPeerReady (DRPlacementControl) is True when the peer cluster is ready for the next
	// failover or relocation.
	ConditionPeerReady = "PeerReady"
	// ConditionProtected (DRPlacementControl) is True when the application's data and metadata
	// replicate within the policy's interval.
	ConditionProtected = "Protected"

	// ConditionActionAccepted (DRPlacementControl) is False when the hub refuses the action the
	// spec asks for, or postpones it; the message says why and what to do. True otherwise.
	ConditionActionAccepted = "ActionAccepted"
	// ConditionPlacementReady (DRPlacementControl, placement mode with Argo CD) is True when
	// every ApplicationSet that follows the DRPlacementControl's decision targets only the
	// policy's clusters.
	ConditionPlacementReady = "PlacementReady"
	// ConditionDataReady (VolumeReplicationGroup, protected PVC) is True when the PVCs hold the
	// role replicationState asks for.
	ConditionDataReady = "DataReady"
	// ConditionDataProtected (VolumeReplicationGroup, protected PVC) is True when the PVCs
	// replicate: on a primary, they sync to the peer; on a secondary, they receive.
	ConditionDataProtected = "DataProtected"
	// ConditionClusterDataReady (VolumeReplicationGroup) is True when the PV/PVC metadata needed
	// on this cluster is restored or adopted.
	ConditionClusterDataReady = "ClusterDataReady"
	// ConditionClusterDataProtected (VolumeReplicationGroup) is True when the PV/PVC metadata is
	// written to every S3 profile.
	ConditionClusterDataProtected = "ClusterDataProtected"
	// ConditionKubeObjectsReady (VolumeReplicationGroup) is True when the selected Kubernetes
	// objects are captured (primary) or restored (after a failover or relocation).
	ConditionKubeObjectsReady = "KubeObjectsReady"
	// ConditionWorkloadsReady (VolumeReplicationGroup) is True when, after a failover or
	// relocation promoted the group, the Deployments and StatefulSets that mount its PVCs run
	// there; False with why they do not (a refused pod, a PVC not Bound, a pod not running).
	ConditionWorkloadsReady = "WorkloadsReady"
)

// Condition reasons shared by several condition types.
const (
	// ReasonSucceeded: the condition holds.
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: drover is working towards the condition; no action is needed.
	ReasonProgressing = "Progressing"
	// ReasonInvalidSpec: the spec cannot work as written; the message says which field to fix.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNotFound: an object the spec refers to does not exist; the message names it.
	ReasonNotFound = "NotFound"
	// ReasonError: an operation failed; the message says what failed. drover retries.
	ReasonError = "Error"
	// ReasonUnknown: the state cannot be observed, usually because a cluster is unreachable.
	ReasonUnknown = "Unknown"
)

// Condition reasons specific to one condition type.
const (
	// ReasonUnreachable (Reachable): the probe has failed for longer than the grace period.
	ReasonUnreachable = "Unreachable"
	// ReasonProbeFailing (Reachable): the probe fails but the grace period has not run out.
	ReasonProbeFailing = "ProbeFailing"
	// ReasonCredentialExpired (Reachable): the hub's token for the cluster expired without
	// being renewed; `drover cluster join` issues a new one.
	ReasonCredentialExpired = "CredentialExpired" //nolint:gosec // G101: a condition reason, not a credential
	// ReasonCredentialRefused (Reachable): the cluster refuses the hub's credential (401): it
	// was revoked, or is not the cluster's; `drover cluster join` issues a new one.
	ReasonCredentialRefused = "CredentialRefused" //nolint:gosec // G101: a condition reason, not a credential
	// ReasonUnfenced (Fenced): the cluster is not fenced.
	ReasonUnfenced = "Unfenced"
	// ReasonFenced (Fenced): the cluster is fenced after a failover away from it.
	ReasonFenced = "Fenced"

	// ReasonActionInProgress (Available, PeerReady): a failover or relocation is running.
	ReasonActionInProgress = "ActionInProgress"
	// ReasonPeerUnreachable (PeerReady): the peer cluster is unreachable.
	ReasonPeerUnreachable = "PeerUnreachable"
	// ReasonRebuildingStatus (ActionAccepted): a DRPlacementControl that `drover hub restore`
	// created waits until its groups tell where the application runs (a cluster that does not
	// answer, a relocation half done, two groups asked primary); the message says which.
	ReasonRebuildingStatus = "RebuildingStatus"
	// ReasonPeerNotReady (ActionAccepted): a relocation needs PeerReady, which is False.
	ReasonPeerNotReady = "PeerNotReady"
	// ReasonPrimaryNotProtected (ActionAccepted): a relocation needs the primary's data
	// protected (DataProtected), which it is not.
	ReasonPrimaryNotProtected = "PrimaryNotProtected"
	// ReasonClusterNotInPolicy (Validated of a DRPlacementControl): a cluster the spec names is
	// not one of the two clusters of its DRPolicy.
	ReasonClusterNotInPolicy = "ClusterNotInPolicy"
	// ReasonNamespaceConflict (Validated of a DRPlacementControl): another DRPlacementControl
	// already protects one of its namespaces.
	ReasonNamespaceConflict = "NamespaceConflict"
	// ReasonPlacementSteered (Validated of a DRPlacementControl): the OCM Placement it names
	// is already steered by another DRPlacementControl, which writes its decisions.
	ReasonPlacementSteered = "PlacementSteered"
	// ReasonNamespaceNotAllowed (Validated of a DRPlacementControl): spec.protectedNamespaces
	// names a namespace other than the DRPlacementControl's own, or spec.placementRef a
	// Placement of another namespace, and the DRPlacementControl is not in an admin namespace.
	// Also DataReady of a VolumeReplicationGroup on a managed cluster that protects namespaces
	// other than its own from a namespace that is not an admin namespace of that cluster.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonPolicyNotAllowed (Validated of a DRPlacementControl): the DRPolicy it names may not
	// be named from its namespace: the policy asks for privileged VolSync movers and the
	// namespace is not an admin namespace, or the policy's administrator listed the namespaces
	// that may name it (annotation drover.io/tenant-namespaces) and this one is not among them.
	ReasonPolicyNotAllowed = "PolicyNotAllowed"
	// ReasonSystemNamespace (Validated of a DRPlacementControl, and of a VolumeReplicationGroup
	// on a managed cluster): the namespaces to protect include a system namespace (kube-*,
	// openshift-*, drover-system, or one the hub or agent was told of), which drover never
	// protects.
	ReasonSystemNamespace = "SystemNamespace"
	// ReasonPolicyNotValidated (Validated of a DRPlacementControl): its DRPolicy is not
	// Validated.
	ReasonPolicyNotValidated = "PolicyNotValidated"
	// ReasonNoKubeconfig (Validated of a DRCluster): the kubeconfig Secret is missing or
	// unusable.
	ReasonNoKubeconfig = "NoKubeconfig"
	// ReasonNeverReachable (Validated of a DRCluster): the cluster has not answered the probe
	// once yet.
	ReasonNeverReachable = "NeverReachable"
	// ReasonClusterNotValidated (Validated of a DRPolicy): one of its DRClusters is missing or
	// not Validated.
	ReasonClusterNotValidated = "ClusterNotValidated"
	// ReasonNoS3Profile (Validated of a DRPolicy): a DRCluster's s3ProfileName is not defined
	// in the policy's s3Profiles.
	ReasonNoS3Profile = "NoS3Profile"
	// ReasonSyncStale (Protected): the last group sync is older than twice the policy's interval
	// plus the storage's status refresh (SyncStaleAfter).
	ReasonSyncStale = "SyncStale"

	// ReasonReplicationNotReleased (DataReady, while a group is unprotected or a PVC the
	// application deleted is released): the storage keeps a VolumeReplication being deleted.
	// ceph-csi releases a secondary volume only while it replays a live primary (csi-addons keeps
	// the VolumeReplication and the PVC's pvc-protection finalizer and retries); the message
	// names the VolumeReplication and what releases it.
	ReasonReplicationNotReleased = "ReplicationNotReleased"
	// ReasonReleasePending (DataReady True, a secondary's PVC): the application deleted the PVC
	// on this secondary; it is demoted, and its VolumeReplication is released (and the PVC with
	// it) once the storage replays the peer's primary into it. The hub holds PeerReady
	// meanwhile: a promotion here would find the Terminating PVC in the way of the one it
	// restores.
	ReasonReleasePending = "ReleasePending"

	// ReasonPVCInUse (DataReady): a pod or VolumeAttachment still uses a PVC that must be
	// demoted; the message names it.
	ReasonPVCInUse = "PVCInUse"
	// ReasonPVCConflict (DataReady, ClusterDataReady): a PV or PVC left on the cluster does not
	// match the one being restored; drover never overwrites it. The message names the field.
	ReasonPVCConflict = "PVCConflict"
	// ReasonPVConflict (ClusterDataReady, DataReady of the PVC): a PV left on the cluster has
	// the name of one being restored but another driver, volume handle, claim, access mode or
	// volume mode; drover never overwrites it. The message names the PV and the mismatch.
	ReasonPVConflict = "PVConflict"
	// ReasonSecondary (DataReady, and as the reason of the conditions that do not apply to a
	// secondary: DataProtected, ClusterDataReady, ClusterDataProtected): the group is secondary;
	// its PVCs, if any, receive the peer primary's replication.
	ReasonSecondary = "Secondary"
	// ReasonFenceNotAvailable (DataReady): a relocation's demotion waits for the admission
	// webhook that fences new consumers of the PVCs, which this agent runs without.
	ReasonFenceNotAvailable = "FenceNotAvailable"
	// ReasonSplitBrain (ClusterDataProtected): a stale primary (see ReasonStalePrimary) whose
	// storage still reports its PVCs primary: both clusters hold writable primaries. drover
	// tells it from the stores' epochs and its own VolumeReplications' state (the storage says
	// nothing of it); it writes nothing to any store until it is demoted.
	ReasonSplitBrain = "SplitBrain"
	// ReasonStalePrimary (ClusterDataProtected, KubeObjectsReady): a store's primary marker
	// names another cluster with a newer epoch: this group is a stale primary (its cluster was
	// failed away from while unreachable) and writes nothing to any store until it is demoted.
	ReasonStalePrimary = "StalePrimary"
	// ReasonNoBackend (DataReady, DataProtected): no storageClassBackends entry matches a PVC's
	// StorageClass.
	ReasonNoBackend = "NoBackend"
	// ReasonPVCNotBound (DataReady of a protected PVC, DataReady, ClusterDataProtected): a
	// selected PVC is not Bound yet; drover protects it once it is. (WorkloadsReady, and the
	// DRPC's Available): a PVC of a promoted group is not Bound; the message quotes its latest
	// warning event.
	ReasonPVCNotBound = "PVCNotBound"
	// ReasonPVCSelectedByOtherGroup (DataReady): a selected PVC is already protected by another
	// VolumeReplicationGroup; the message names it. Narrow one of the pvcSelectors.
	ReasonPVCSelectedByOtherGroup = "PVCSelectedByOtherGroup"
	// ReasonConsistencyGroupUnsupported (DataReady of a protected PVC, DataReady): a PVC of a
	// consistency group cannot be replicated with the group's other members from one instant:
	// its storage has no group replication (for VolRep, no VolumeGroupReplicationClass of its
	// provisioner), its backend or namespace differs from another member's, or a second group
	// selects it. The message names the group, the PVC and what to create or change. drover
	// never falls back to protecting such a PVC on its own.
	ReasonConsistencyGroupUnsupported = "ConsistencyGroupUnsupported"
	// ReasonBackendNotAvailable (DataReady): storageClassBackends chooses a backend for a PVC's
	// StorageClass that this agent does not implement.
	ReasonBackendNotAvailable = "BackendNotAvailable"
	// ReasonNoReplicationClass (DataReady): no VolumeReplicationClass matches a PVC's
	// provisioner and the schedulingInterval; the message names the class to create.
	ReasonNoReplicationClass = "NoReplicationClass"
	// ReasonReplicationClassAmbiguous (DataReady): several VolumeReplicationClasses match a
	// PVC; the message names them. Set spec.volRep.replicationClassSelector.
	ReasonReplicationClassAmbiguous = "ReplicationClassAmbiguous"
	// ReasonReplicationConflict (DataReady): an object of the backend that drover would create
	// for a PVC already exists and belongs to something else; the message names it.
	ReasonReplicationConflict = "ReplicationConflict"
	// ReasonStoreUnavailable (ClusterDataProtected, ClusterDataReady, KubeObjectsReady): an S3
	// profile cannot be read or written; the message names it.
	ReasonStoreUnavailable = "StoreUnavailable"
	// ReasonStoreObjectRefused (ClusterDataProtected, ClusterDataReady, KubeObjectsReady): an S3
	// profile holds an object that drover refuses to read or to restore: larger than its limit,
	// more keys than the limit, an absurd epoch, or content that a checked restore refuses (an
	// object outside the protected namespaces, a cluster-scoped kind, a PV that is not of the
	// policy's CSI drivers). The message names the store and the object; nothing is created
	// from it.
	ReasonStoreObjectRefused = "StoreObjectRefused"
	// ReasonPodSecurityRefused (KubeObjectsReady): the restore left out captured workloads whose
	// pods the Pod Security level of their namespace (the captured one, never below baseline)
	// would refuse; the message names each with the reasons. The rest is restored.
	ReasonPodSecurityRefused = "PodSecurityRefused"
	// ReasonVolSyncDestinationUnknown (DataReady of a VolSync PVC on a primary): spec.volSync
	// names no destination for the PVC, or its key Secret is not on this cluster yet; the hub
	// copies both from the secondary.
	ReasonVolSyncDestinationUnknown = "VolSyncDestinationUnknown"
	// ReasonNoSnapshotClass (DataReady): no VolumeSnapshotClass of a VolSync PVC's provisioner
	// matches spec.volSync.volumeSnapshotClassSelector; the message names what to create.
	ReasonNoSnapshotClass = "NoSnapshotClass"
	// ReasonSnapshotClassAmbiguous (DataReady): several VolumeSnapshotClasses match a VolSync
	// PVC; the message names them. Set spec.volSync.volumeSnapshotClassSelector.
	ReasonSnapshotClassAmbiguous = "SnapshotClassAmbiguous"
	// ReasonNoLatestImage (ClusterDataReady): a VolSync PVC cannot be restored because its
	// ReplicationDestination on this cluster has not received a sync (no status.latestImage).
	ReasonNoLatestImage = "NoLatestImage"
	// ReasonSyncFailed (DataReady): VolSync reports a sync of a PVC failing; the message
	// carries VolSync's own message.
	ReasonSyncFailed = "SyncFailed"
	// ReasonMoverFailed (DataProtected): VolSync's mover of a PVC failed and is being retried (the
	// Synchronizing condition stays SyncInProgress); the message quotes the ReplicationSource's
	// status.latestMoverStatus.
	ReasonMoverFailed = "MoverFailed"
	// ReasonVolSyncAddressUnreachable (DataProtected of a secondary): a VolSync destination has
	// no address the peer can use (its ServiceExport is not exported by a Multi-Cluster Services
	// implementation, or its LoadBalancer Service gets no address); the message says which
	// DRPolicy spec.volSyncAddress to choose.
	ReasonVolSyncAddressUnreachable = "VolSyncAddressUnreachable"
	// ReasonVolSyncMoverUserUnknown (DataProtected of a primary's VolSync PVC, and of a
	// secondary): no user is known for the PVC's unprivileged movers, which would run as UID 0
	// without capabilities, and rsync cannot; drover starts none. The message says why the
	// application's pods give no user and what to set (the DRPlacementControl's
	// volSyncMoverSecurityContext, or the DRPolicy's volSyncMovers Privileged).
	ReasonVolSyncMoverUserUnknown = "VolSyncMoverUserUnknown"
	// ReasonUntrustedPeerStatus (PeerReady): the peer's group reports VolSync destinations that
	// name a namespace the group does not protect or a key Secret drover does not derive; the
	// hub does not hand them to the primary, and the message names the cluster and the entries.
	ReasonUntrustedPeerStatus = "UntrustedPeerStatus"
	// ReasonPodsRefused (WorkloadsReady, and the DRPC's Available): a workload that mounts the
	// group's PVCs could not create its pods (an admission webhook, a quota); the message
	// quotes the workload's failure condition or FailedCreate event.
	ReasonPodsRefused = "PodsRefused"
	// ReasonPodsNotRunning (WorkloadsReady, and the DRPC's Available): a workload that mounts
	// the group's PVCs has fewer pods running than it asks for; the message names the first pod
	// that does not run and why.
	ReasonPodsNotRunning = "PodsNotRunning"
	// ReasonHookRunning (the DRPC's Available or PeerReady): the action waits for a hook of the
	// application's recipe; the message names it, where it runs and since when.
	ReasonHookRunning = "HookRunning"
	// ReasonHookFailed (the group's WorkloadsReady or DataReady, the DRPC's Available or
	// PeerReady): a hook with onError Fail failed and the action stands at it; the message names
	// the hook, where it ran, its exit code or Job result and output tail, and says to retry or
	// continue (`drover failover APP --retry` / `--continue`).
	ReasonHookFailed = "HookFailed"
)

// Event reasons. drover records events on transitions only.
const (
	// EventUntrustedPeerStatus: the peer's group reported data the hub refuses to act on
	// (PeerReady reason UntrustedPeerStatus).
	EventUntrustedPeerStatus = "UntrustedPeerStatus"
	// EventFailoverStarted: a failover began.
	EventFailoverStarted = "FailoverStarted"
	// EventFailoverCompleted: a failover completed.
	EventFailoverCompleted = "FailoverCompleted"
	// EventPromotingWithoutDemotion (Warning): a failover promotes its target without having
	// demoted the old primary, which does not answer (never did, or stopped meanwhile) or is
	// declared lost.
	EventPromotingWithoutDemotion = "PromotingWithoutDemotion"
	// EventHookSucceeded, EventHookFailed (Warning), EventHookContinued (Warning) and
	// EventHookPassedOver: a run of a recipe's hook ended so on a cluster; the note names the
	// hook, point, cluster and attempt, and for a failure its exit code and output tail.
	EventHookSucceeded  = "HookSucceeded"
	EventHookFailed     = "HookFailed"
	EventHookContinued  = "HookContinued"
	EventHookPassedOver = "HookPassedOver"
	// EventHookDecisionIgnored (Warning): spec.hookDecision answers no failed run of a hook in
	// the action in force, so the hub hands it to no cluster; the note says which runs failed.
	EventHookDecisionIgnored = "HookDecisionIgnored"
	// EventRelocateStarted: a relocation began.
	EventRelocateStarted = "RelocateStarted"
	// EventRelocateCompleted: a relocation completed.
	EventRelocateCompleted = "RelocateCompleted"
	// EventProtected: an application became protected.
	EventProtected = "Protected"
	// EventUnprotected: protection was removed after the DRPlacementControl was deleted.
	EventUnprotected = "Unprotected"
	// EventReplicationNotReleased (Warning, on a VolumeReplicationGroup): the storage keeps a
	// VolumeReplication the agent deleted (DataReady reason ReplicationNotReleased); the note
	// says what releases it.
	EventReplicationNotReleased = "ReplicationNotReleased"
	// EventPlacementKept (Warning, on the OCM Placement): unprotect left the Placement's
	// scheduling disabled and its decision naming the cluster where the application's data is,
	// because OCM's default prioritizers could move the application away from it; the note says
	// how to hand the Placement back.
	EventPlacementKept = "PlacementKept"
	// EventClusterUnreachable: a DRCluster became unreachable.
	EventClusterUnreachable = "ClusterUnreachable"
	// EventClusterReachable: a DRCluster became reachable again.
	EventClusterReachable = "ClusterReachable"
	// EventPromoted: a VolumeReplicationGroup's PVCs became primary.
	EventPromoted = "Promoted"
	// EventDemoted: a VolumeReplicationGroup's PVCs became secondary.
	EventDemoted = "Demoted"
	// EventFinalSyncCompleted: the final sync of a relocation completed.
	EventFinalSyncCompleted = "FinalSyncCompleted"
	// EventPVCAdopted: a PV or PVC left from an earlier failover matched and was adopted.
	EventPVCAdopted = "PVCAdopted"
	// EventPVCConflict: a PV or PVC left on the cluster conflicts with the one being restored.
	EventPVCConflict = "PVCConflict"

	// EventPhaseChanged: a DRPlacementControl entered a phase that no action event tells
	// (Deploying, Deployed); the note names the phase and the step.
	EventPhaseChanged = "PhaseChanged"
	// EventProgressionChanged: a DRPlacementControl moved to another step of its phase.
	EventProgressionChanged = "ProgressionChanged"
	// EventActionRefused: the hub refuses or postpones the action the spec asks for
	// (ActionAccepted turned False, or its reason changed); the note says why and what to do.
	EventActionRefused = "ActionRefused"
	// EventValidationFailed: the hub does not act on a DRPlacementControl (Validated turned
	// False, or its reason changed); the note says what to fix.
	EventValidationFailed = "ValidationFailed"
	// EventPeerReady: PeerReady turned True: the peer can take over.
	EventPeerReady = "PeerReady"
	// EventPeerNotReady: PeerReady turned False or Unknown; the note carries the reason.
	EventPeerNotReady = "PeerNotReady"
	// EventProtectionLost: Protected turned False or Unknown; the note carries the reason
	// (SyncStale: the last group sync is older than twice the interval).
	EventProtectionLost = "ProtectionLost"
	// EventFenced: a VolumeReplicationGroup being demoted for a relocation fenced its PVCs: the
	// admission webhook refuses new pods that mount them.
	EventFenced = "Fenced"
	// EventUnfenced: a VolumeReplicationGroup primary again lifted the fence of its namespaces.
	EventUnfenced = "Unfenced"
	// EventStalePrimary: a VolumeReplicationGroup found a newer primary's marker in a store: it
	// is a stale primary and writes nothing to the stores until the hub demotes it.
	EventStalePrimary = "StalePrimary"
)

// Drills (DRDrill). ConditionDrillAccepted is False, with one of the reasons below, when the hub
// refuses or aborts a drill.
const (
	// ConditionDrillAccepted (DRDrill) is True once the hub started the drill.
	ConditionDrillAccepted = "Accepted"
	// ReasonDRPCNotFound: the drill names no DRPlacementControl of its namespace.
	ReasonDRPCNotFound = "DRPCNotFound"
	// ReasonNotProtected: the application is not Protected (or not settled), so its replicated
	// data is no recovery point to drill from.
	ReasonNotProtected = "NotProtected"
	// ReasonDrillRunning: another drill of the application runs.
	ReasonDrillRunning = "DrillRunning"
	// ReasonDrillWaiting: another drill of the application, created before this one, waits to
	// start: one drill of an application runs or waits at a time.
	ReasonDrillWaiting = "DrillWaiting"
	// ReasonBadTarget: the target cluster is the primary or not one of the policy's clusters.
	ReasonBadTarget = "BadTarget"
	// ReasonCheckNotAllowed: the check Job would run a pod the sandbox's Pod Security level
	// refuses, or passes a bound of a check (parallelism, completions, retries, deadline).
	ReasonCheckNotAllowed = "CheckNotAllowed"
	// ReasonActionOvertook: a failover or relocation was asked for during the drill, which was
	// aborted and torn down first.
	ReasonActionOvertook = "ActionOvertook"
	// ReasonDrillTimedOut: the drill did not reach its result within spec.timeout.
	ReasonDrillTimedOut = "TimedOut"
	// ReasonDrillStarted: the hub accepted the drill and asked the target cluster for its
	// sandbox (Accepted True).
	ReasonDrillStarted = "Started"
)

// Events of drills, recorded on the DRDrill and on its DRPlacementControl.
const (
	// EventDrillStarted: the hub accepted a drill; the note names the target and the primary.
	EventDrillStarted = "DrillStarted"
	// EventDrillRefused (Warning): the hub refused a drill; the note says why and what to do.
	EventDrillRefused = "DrillRefused"
	// EventDrillAborted (Warning): a failover or relocation overtook a drill, or its
	// DRPlacementControl went away; the sandbox is torn down.
	EventDrillAborted = "DrillAborted"
	// EventDrillPassed: a drill's sandbox started and passed its check, and was torn down; the
	// note carries the RTO and the RPO.
	EventDrillPassed = "DrillPassed"
	// EventDrillFailed (Warning): a drill's sandbox did not start, its check failed or it timed
	// out; the sandbox was torn down.
	EventDrillFailed = "DrillFailed"
)
