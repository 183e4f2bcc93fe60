package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyReference names a DRPolicy.
type PolicyReference struct {
	// name of the DRPolicy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// RecipeReference names a DRRecipe in the DRPlacementControl's namespace: a recipe of another
// namespace cannot be named, so that no team runs hooks another team wrote.
type RecipeReference struct {
	// name of the DRRecipe.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// PlacementReference names the object that tells a GitOps tool where to deploy an application.
// drover writes the PlacementDecision of that object.
type PlacementReference struct {
	// kind of the placement object. Placement (cluster.open-cluster-management.io) is the only
	// kind supported: drover writes its PlacementDecision.
	// +required
	// +kubebuilder:validation:Enum=Placement
	Kind string `json:"kind,omitempty"`

	// name of the placement object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// namespace of the placement object; empty means the DRPlacementControl's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// ConsistencyGroup is a set of an application's PVCs that fail over, relocate and are restored
// from one instant.
type ConsistencyGroup struct {
	// name of the group: a DNS label, unique among the DRPlacementControl's groups.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a consistency group's name must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or a digit"
	Name string `json:"name,omitempty"`

	// selector selects the group's PVCs among those pvcSelector selects; an empty selector
	// selects all of them. At most 32 matchLabels and 16 matchExpressions of at most 64 values
	// each.
	// +required
	// +kubebuilder:validation:XValidation:rule="(!has(self.matchLabels) || size(self.matchLabels) <= 32) && (!has(self.matchExpressions) || (size(self.matchExpressions) <= 16 && self.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64)))",message="a consistency group's selector may hold at most 32 matchLabels and 16 matchExpressions of at most 64 values each"
	Selector metav1.LabelSelector `json:"selector"`
}

// DRPlacementControlSpec names one protected application, its policy and the action asked of it.
// The application is named either by protectedNamespaces (self-contained mode: drover captures
// and restores its objects itself) or by placementRef (a GitOps tool deploys it where drover's
// PlacementDecision says), never both.
//
// +kubebuilder:validation:XValidation:rule="has(self.protectedNamespaces) != has(self.placementRef)",message="set exactly one of protectedNamespaces (drover captures and restores the application's objects) or placementRef (a GitOps tool deploys the application)"
// +kubebuilder:validation:XValidation:rule="has(self.placementRef) == has(oldSelf.placementRef)",message="cannot switch between protectedNamespaces and placementRef: create a new DRPlacementControl"
// +kubebuilder:validation:XValidation:rule="has(self.consistencyGroups) == has(oldSelf.consistencyGroups)",message="consistencyGroups is immutable: delete and recreate the DRPlacementControl to group its PVCs otherwise; a PVC joins or leaves a group by its labels"
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.action != 'Failover' || has(self.failoverCluster)",message="action Failover requires failoverCluster: name the cluster to fail over to"
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.action != 'Relocate' || has(self.preferredCluster)",message="action Relocate requires preferredCluster: name the cluster to relocate to"
type DRPlacementControlSpec struct {
	// drPolicyRef names the DRPolicy that protects the application. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="drPolicyRef is immutable: delete and recreate the DRPlacementControl to change its policy"
	DRPolicyRef PolicyReference `json:"drPolicyRef"`

	// preferredCluster is the cluster where the application runs when no failover is in force,
	// and where action Relocate moves it. Empty means where the application runs when drover
	// starts protecting it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PreferredCluster string `json:"preferredCluster,omitempty"`

	// failoverCluster is the cluster where action Failover starts the application.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	FailoverCluster string `json:"failoverCluster,omitempty"`

	// action asks for a failover or a relocation; empty asks for none. The action in force stays
	// set: change it, with failoverCluster or preferredCluster, to move the application again.
	// +optional
	Action DRAction `json:"action,omitempty"`

	// pvcSelector selects the application's PVCs in its namespaces. It cannot change. At most
	// 32 matchLabels and 16 matchExpressions of at most 64 values each.
	// +required
	// +kubebuilder:validation:XValidation:rule="(!has(self.matchLabels) || size(self.matchLabels) <= 32) && (!has(self.matchExpressions) || (size(self.matchExpressions) <= 16 && self.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64)))",message="pvcSelector may hold at most 32 matchLabels and 16 matchExpressions of at most 64 values each"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pvcSelector is immutable: delete and recreate the DRPlacementControl to protect other PVCs"
	PVCSelector metav1.LabelSelector `json:"pvcSelector"`

	// consistencyGroups name the PVCs that must be restored from one instant: each group selects,
	// among the PVCs pvcSelector selects, those whose storage replicates them together (for
	// example a database's data and its write-ahead log on two PVCs). A PVC no group selects is
	// replicated on its own, from its own instant; a PVC two groups select is refused. Every PVC
	// of a group must be in one namespace and on one storage that can replicate a group (VolRep:
	// a VolumeGroupReplicationClass of its provisioner); otherwise the application is not
	// protected and its condition, reason ConsistencyGroupUnsupported, says what is missing.
	// PVCs join and leave a group by their labels. At most 8 groups. It cannot change.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="consistencyGroups is immutable: delete and recreate the DRPlacementControl to group its PVCs otherwise; a PVC joins or leaves a group by its labels"
	ConsistencyGroups []ConsistencyGroup `json:"consistencyGroups,omitempty"`

	// protectedNamespaces are the namespaces of a self-contained application: drover protects
	// their selected PVCs and captures and restores their objects. A DRPlacementControl outside
	// an admin namespace (drover-system, or one the hub's --admin-namespaces names) may name only
	// its own namespace; none may name a system namespace (kube-*, openshift-*, drover-system).
	// It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="protectedNamespaces is immutable: delete and recreate the DRPlacementControl to protect other namespaces"
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ProtectedNamespaces []string `json:"protectedNamespaces,omitempty"`

	// placementRef names the placement a GitOps tool follows to deploy the application; drover
	// protects the selected PVCs of the DRPlacementControl's namespace. The placement must be
	// in the DRPlacementControl's namespace, unless the DRPlacementControl is in an admin
	// namespace. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="placementRef is immutable: create a new DRPlacementControl"
	PlacementRef *PlacementReference `json:"placementRef,omitempty"`

	// kubeObjectProtection selects the Kubernetes objects to capture and restore. Empty captures
	// every namespaced object of protectedNamespaces, and none in placementRef mode.
	// +optional
	KubeObjectProtection *KubeObjectProtectionSpec `json:"kubeObjectProtection,omitempty"`

	// volSyncMoverSecurityContext is who VolSync's movers run as for the application's PVCs that
	// VolSync replicates, with the DRPolicy's volSyncMovers Unprivileged: the user (and group
	// and fsGroup) the application writes its files as. Unset, drover takes it, for each PVC,
	// from the application's pods that mount the PVC when every one of their containers that
	// mounts it runs as one non-root runAsUser (and they agree on runAsGroup and fsGroup). When
	// they do not (a container runs as root or states no runAsUser, or the pods differ), the
	// movers cannot run and the DRPlacementControl says so: set this field, or set the
	// DRPolicy's volSyncMovers to Privileged.
	// +optional
	VolSyncMoverSecurityContext *VolSyncMoverSecurityContext `json:"volSyncMoverSecurityContext,omitempty"`

	// recipeRef names the DRRecipe, in the DRPlacementControl's namespace, that declares the
	// application's restore order and hooks (docs/decisions/0011-application-hooks.md). It may
	// change: an action uses the recipe as it was when the action started (docs/hooks.md says
	// which points and kinds the agents run).
	// +optional
	RecipeRef *RecipeReference `json:"recipeRef,omitempty"`

	// hookDecision answers a hook that failed with onError Fail during the action in progress:
	// Retry runs it again, Continue goes on past it. It names the hook and the failed attempt
	// (status.hooks), so that it answers that failure only. `drover failover --retry` and
	// `--continue` (and relocate's) set it.
	// +optional
	HookDecision *HookDecision `json:"hookDecision,omitempty"`

	// drillHistoryLimit is how many finished DRDrills of this application the hub keeps as
	// history; older ones are deleted. Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	DrillHistoryLimit *int32 `json:"drillHistoryLimit,omitempty"`
}

// DRPCPhase is where a DRPlacementControl stands in its lifecycle.
// +kubebuilder:validation:Enum=Deploying;Deployed;FailingOver;FailedOver;Relocating;Relocated;Deleting
type DRPCPhase string

const (
	// PhaseDeploying means drover is setting up protection on the preferred cluster.
	PhaseDeploying DRPCPhase = "Deploying"
	// PhaseDeployed means the application runs protected on its preferred cluster.
	PhaseDeployed DRPCPhase = "Deployed"
	// PhaseFailingOver means a failover to failoverCluster is in progress.
	PhaseFailingOver DRPCPhase = "FailingOver"
	// PhaseFailedOver means the application runs on failoverCluster after a failover.
	PhaseFailedOver DRPCPhase = "FailedOver"
	// PhaseRelocating means a relocation to preferredCluster is in progress.
	PhaseRelocating DRPCPhase = "Relocating"
	// PhaseRelocated means the application runs on preferredCluster after a relocation.
	PhaseRelocated DRPCPhase = "Relocated"
	// PhaseDeleting means drover is removing protection because the DRPlacementControl is
	// being deleted.
	PhaseDeleting DRPCPhase = "Deleting"
)

// VRGSummary is the hub's summary of the VolumeReplicationGroup of one application on one
// cluster: its state, the two conditions a failover or relocation depends on, and what is wrong
// with it. The group's status on its cluster holds all its conditions. The summary is short on
// purpose: the hub rewrites it at every group sync of every application, and an API server's
// work for a status write grows with each condition the object carries (a copy of both groups'
// nine conditions made a settled application's status write cost its API server ~1.3 × the
// CPU, docs/design/hub.md). For the same reason its list of PVCs is bounded and changes only
// with the rest of the summary.
type VRGSummary struct {
	// cluster is the DRCluster that holds the VolumeReplicationGroup.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster,omitempty"`

	// replicationState is the state the hub asks of the VolumeReplicationGroup.
	// +optional
	ReplicationState ReplicationState `json:"replicationState,omitempty"`

	// state is the state the VolumeReplicationGroup reports.
	// +optional
	State VRGState `json:"state,omitempty"`

	// dataReady is the status of the group's DataReady condition (empty: not reported yet).
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown
	DataReady metav1.ConditionStatus `json:"dataReady,omitempty"`

	// dataProtected is the status of the group's DataProtected condition (empty: not reported
	// yet).
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown
	DataProtected metav1.ConditionStatus `json:"dataProtected,omitempty"`

	// problems are the group's conditions that are not True, with their reasons and messages,
	// except those of a secondary that only defer to the primary (reason Secondary). Empty while
	// the group is healthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Problems []metav1.Condition `json:"problems,omitempty"`

	// lastGroupSyncTime is the VolumeReplicationGroup's last time all its PVCs had synced or,
	// with none selected, its last capture of the objects that every store holds.
	// +optional
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`

	// protectedPVCs is how many PVCs the VolumeReplicationGroup reports (its
	// status.protectedPVCs); zero for a group protected by its captured objects alone. It is
	// the total: pvcs may list fewer.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ProtectedPVCs *int32 `json:"protectedPVCs,omitempty"`

	// pvcs are the group's PVCs with their last sync, for a person who wants to see which PVC
	// lags: every PVC of a group that reports syncs (a primary's) and, of a secondary, only
	// the PVCs that something holds back (a secondary's PVCs receive the peer's syncs and
	// report none). Past 16 PVCs it keeps the 16 that a person wants to see first: those held
	// back (reason set), then the least recently synced, never synced first; protectedPVCs
	// holds the total and the group's status on its cluster lists them all. The list is sorted
	// by namespace and name.
	//
	// It is refreshed together with the rest of the summary: when the group's last group sync,
	// state, conditions or PVC count change, not at each PVC's sync, so that it adds no status
	// write. A PVC's lastSyncTime here may therefore be older than on its cluster, by less than
	// an interval while the group syncs, but never older than the group's lastGroupSyncTime,
	// which changes when the least recently synced PVC syncs.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	PVCs []PVCSyncSummary `json:"pvcs,omitempty"`

	// observedGeneration is the VolumeReplicationGroup's status.observedGeneration.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// agentVersion is the VolumeReplicationGroup's status.agentVersion: the version of the
	// agent of its cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AgentVersion string `json:"agentVersion,omitempty"`
}

// MaxPVCSummaries is how many PVCs a VRGSummary lists at most (its pvcs' MaxItems).
const MaxPVCSummaries = 16

// PVCSyncSummary is the hub's view of one PVC of a VolumeReplicationGroup: its last sync and
// whether it is protected, from the group's status.protectedPVCs.
type PVCSyncSummary struct {
	// namespace of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// name of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// dataProtected is the status of the PVC's DataProtected condition: True once a sync of
	// the PVC completed on the primary, False while none has or its replication fails, Unknown
	// on a secondary (its PVC receives the peer's syncs); empty: not reported yet.
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown
	DataProtected metav1.ConditionStatus `json:"dataProtected,omitempty"`

	// reason says what holds the PVC back: the reason of its DataReady condition when that is
	// not True, else of its DataProtected condition when that is not True; a secondary's
	// deferral to the primary (reason Secondary) holds nothing back. Empty when nothing does.
	// The group's status on its cluster has the condition's message.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// lastSyncTime is when the PVC's last completed sync started: its recovery point. Unset
	// until its first sync, and on a secondary.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// lastSyncDuration is how long the PVC's last sync took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
}

// DRPlacementControlStatus is the hub's view of a protected application.
type DRPlacementControlStatus struct {
	// phase is where the application stands in its lifecycle.
	// +optional
	Phase DRPCPhase `json:"phase,omitempty"`

	// progression is the current step of the phase, for people and the CLI.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Progression string `json:"progression,omitempty"`

	// conditions: Available (the application runs where the spec asks), PeerReady (the peer is
	// ready for a failover or relocation) and Protected (its data replicates within the
	// policy's interval).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// currentPrimary is the cluster whose VolumeReplicationGroup is primary.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CurrentPrimary string `json:"currentPrimary,omitempty"`

	// lastGroupSyncTime is the last time all the application's PVCs had synced to the peer or,
	// with no PVC selected, the last capture of its objects that every store holds: the
	// recovery point of a failover now.
	// +optional
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`

	// syncRefreshInterval is how often the primary's storage refreshes the sync times behind
	// lastGroupSyncTime (its VolumeReplicationGroup's syncRefreshInterval). The last group sync
	// is stale (Protected False, SyncStale) once it is older than twice the policy's interval
	// plus this.
	// +optional
	SyncRefreshInterval *metav1.Duration `json:"syncRefreshInterval,omitempty"`

	// actionTarget is the cluster the action in progress, or the last one, moves the application
	// to. It is kept in the status because the spec may ask for something else while an action
	// runs, and the action must finish where it started.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ActionTarget string `json:"actionTarget,omitempty"`
	// actionStartTime is when the action in force started.
	// +optional
	ActionStartTime *metav1.Time `json:"actionStartTime,omitempty"`

	// actionDuration is how long the action in force took to complete.
	// +optional
	ActionDuration *metav1.Duration `json:"actionDuration,omitempty"`

	// vrgs summarises the application's VolumeReplicationGroup on each cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	// +kubebuilder:validation:MaxItems=2
	VRGs []VRGSummary `json:"vrgs,omitempty"`

	// hooks are the runs of the recipe's hooks for the action in force, on every cluster, the
	// latest attempt of each hook on each cluster, as the clusters' VolumeReplicationGroups
	// report them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Hooks []HookRun `json:"hooks,omitempty"`

	// observedGeneration is the generation of the spec the last successful reconcile observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DRPlacementControl protects one application with a DRPolicy and carries the failover or
// relocation asked of it. It lives on the hub, in the application's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=drpc,categories=drover
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.currentPrimary`
// +kubebuilder:printcolumn:name="PeerReady",type=string,JSONPath=`.status.conditions[?(@.type=="PeerReady")].status`
// +kubebuilder:printcolumn:name="LastSync",type=date,JSONPath=`.status.lastGroupSyncTime`
// +kubebuilder:printcolumn:name="Problem",type=string,JSONPath=`.status.conditions[?(@.status=="False")].reason`,description="The reason of the first condition that is False: why the hub does not act (Validated), refuses the action (ActionAccepted) or what it waits for"
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`,priority=1
// +kubebuilder:printcolumn:name="Progression",type=string,JSONPath=`.status.progression`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.status=="False")].message`,priority=1,description="The message of the first condition that is False: what is wrong and what to do"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRPlacementControl struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the DRPlacementControl.
	// +required
	Spec DRPlacementControlSpec `json:"spec"`

	// status is the observed state of the DRPlacementControl.
	// +optional
	Status DRPlacementControlStatus `json:"status,omitempty"`
}

// GetConditions returns the DRPlacementControl's conditions.
func (d *DRPlacementControl) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the DRPlacementControl's conditions.
func (d *DRPlacementControl) SetConditions(conditions []metav1.Condition) {
	d.Status.Conditions = conditions
}

// DRPlacementControlList is a list of DRPlacementControls.
//
// +kubebuilder:object:root=true
type DRPlacementControlList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the DRPlacementControls.
	Items []DRPlacementControl `json:"items"`
}
