package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationState is the role a VolumeReplicationGroup asks of the PVCs it protects.
// +kubebuilder:validation:Enum=primary;secondary
type ReplicationState string

const (
	// ReplicationStatePrimary makes the PVCs writable and replicates them to the peer.
	ReplicationStatePrimary ReplicationState = "primary"
	// ReplicationStateSecondary makes the PVCs receive replication from the peer.
	ReplicationStateSecondary ReplicationState = "secondary"
)

// VRGState is the role a VolumeReplicationGroup's PVCs hold, as observed.
// +kubebuilder:validation:Enum=Primary;Secondary;Unknown
type VRGState string

const (
	// StatePrimary means every protected PVC is primary.
	StatePrimary VRGState = "Primary"
	// StateSecondary means every protected PVC is secondary.
	StateSecondary VRGState = "Secondary"
	// StateUnknown means the PVCs do not all hold the same role yet, or it cannot be observed.
	StateUnknown VRGState = "Unknown"
)

// VolRepSpec configures the VolRep backend.
type VolRepSpec struct {
	// replicationClassSelector selects, among the VolumeReplicationClasses of a PVC's
	// provisioner, the one to use. Empty selects all of them.
	// +optional
	ReplicationClassSelector *metav1.LabelSelector `json:"replicationClassSelector,omitempty"`
}

// VolSyncDestination says where the VolSync ReplicationDestination of one PVC listens.
type VolSyncDestination struct {
	// pvcNamespace is the namespace of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	PVCNamespace string `json:"pvcNamespace,omitempty"`

	// pvcName is the name of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PVCName string `json:"pvcName,omitempty"`

	// address is the host or IP address where the ReplicationDestination's rsync-tls listener
	// accepts connections from the primary.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Address string `json:"address,omitempty"`

	// keySecretName names the Secret in the PVC's namespace that holds the rsync-tls pre-shared
	// key; drover keeps it identical on both clusters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	KeySecretName string `json:"keySecretName,omitempty"`
}

// VolSyncReceivePVC describes a PVC of the primary that a secondary receives with VolSync.
type VolSyncReceivePVC struct {
	// pvcNamespace is the namespace of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	PVCNamespace string `json:"pvcNamespace,omitempty"`

	// pvcName is the name of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PVCName string `json:"pvcName,omitempty"`

	// storageClassName is the PVC's StorageClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName string `json:"storageClassName,omitempty"`

	// accessModes are the PVC's access modes.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`

	// capacity is the PVC's requested storage.
	// +required
	Capacity resource.Quantity `json:"capacity"`

	// volumeMode is the PVC's volume mode: a Block PVC is received as Block. Unset means
	// Filesystem.
	// +optional
	// +kubebuilder:validation:Enum=Block;Filesystem
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`

	// moverSecurityContext is who the primary's movers of the PVC run as (its status'
	// protectedPVCs entry): the destination's mover runs as the same user.
	// +optional
	MoverSecurityContext *VolSyncMoverSecurityContext `json:"moverSecurityContext,omitempty"`
}

// VolSyncMovers is how VolSync's movers run: Unprivileged or Privileged.
// +kubebuilder:validation:Enum=Unprivileged;Privileged
type VolSyncMovers string

const (
	// VolSyncMoversUnprivileged runs movers without capabilities, as the user of the group's
	// mover security context (VolSync's default privileges).
	VolSyncMoversUnprivileged VolSyncMovers = "Unprivileged"
	// VolSyncMoversPrivileged lets movers run as root, keeping owners and reading every file.
	VolSyncMoversPrivileged VolSyncMovers = "Privileged"
)

// VolSyncAddress is how a VolSync destination is reached from the peer: LoadBalancer or
// ServiceExport.
// +kubebuilder:validation:Enum=LoadBalancer;ServiceExport
type VolSyncAddress string

const (
	// VolSyncAddressLoadBalancer gives a destination a LoadBalancer Service and reports its
	// address (the default).
	VolSyncAddressLoadBalancer VolSyncAddress = "LoadBalancer"
	// VolSyncAddressServiceExport gives a destination a ClusterIP Service, exports it with a
	// Multi-Cluster Services ServiceExport and reports its clusterset address.
	VolSyncAddressServiceExport VolSyncAddress = "ServiceExport"
)

// VolSyncSpec configures the VolSync backend. The hub fills receivePVCs on the secondary from the
// primary's status.protectedPVCs, and destinations on the primary from the secondary's
// status.volSyncDestinations.
type VolSyncSpec struct {
	// volumeSnapshotClassSelector selects, among the VolumeSnapshotClasses of a PVC's
	// provisioner, the one to use. Empty selects all of them.
	// +optional
	VolumeSnapshotClassSelector *metav1.LabelSelector `json:"volumeSnapshotClassSelector,omitempty"`

	// movers says how VolSync's movers run in the protected namespaces (the DRPolicy's
	// volSyncMovers); Unprivileged when empty.
	// +optional
	Movers VolSyncMovers `json:"movers,omitempty"`

	// address says how the destinations of a secondary are reached from the peer (the
	// DRPolicy's volSyncAddress); LoadBalancer when empty.
	// +optional
	Address VolSyncAddress `json:"address,omitempty"`

	// moverSecurityContext is who unprivileged movers run as for every VolSync PVC of the group
	// (the DRPlacementControl's volSyncMoverSecurityContext). Unset, each PVC's is taken from the
	// pods that mount it on the primary, and handed to the secondary in receivePVCs.
	// +optional
	MoverSecurityContext *VolSyncMoverSecurityContext `json:"moverSecurityContext,omitempty"`

	// receivePVCs, on a secondary, are the PVCs to receive: one ReplicationDestination each.
	// +optional
	// +listType=map
	// +listMapKey=pvcNamespace
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=512
	ReceivePVCs []VolSyncReceivePVC `json:"receivePVCs,omitempty"`

	// destinations, on a primary, are where each PVC's ReplicationSource sends its data.
	// +optional
	// +listType=map
	// +listMapKey=pvcNamespace
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=512
	Destinations []VolSyncDestination `json:"destinations,omitempty"`
}

// VolumeReplicationGroupSpec is what the hub asks of one application on one managed cluster.
type VolumeReplicationGroupSpec struct {
	// replicationState asks for the PVCs to be primary (writable, replicating to the peer) or
	// secondary (receiving from the peer).
	// +required
	ReplicationState ReplicationState `json:"replicationState,omitempty"`

	// action is the reason of the last change of replicationState: Failover or Relocate.
	// +optional
	Action DRAction `json:"action,omitempty"`

	// pvcSelector selects the PVCs to protect: at most 32 matchLabels and 16 matchExpressions
	// of at most 64 values each.
	// +required
	// +kubebuilder:validation:XValidation:rule="(!has(self.matchLabels) || size(self.matchLabels) <= 32) && (!has(self.matchExpressions) || (size(self.matchExpressions) <= 16 && self.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64)))",message="pvcSelector may hold at most 32 matchLabels and 16 matchExpressions of at most 64 values each"
	PVCSelector metav1.LabelSelector `json:"pvcSelector"`

	// consistencyGroups are the DRPlacementControl's consistency groups, each selector the
	// union of the group's and pvcSelector's requirements: the PVCs each selects are replicated
	// together and restored from one instant. The agent labels each member
	// drover.io/consistency-group=<group>.<name> (LabelConsistencyGroup) and, for VolRep,
	// replicates the members with one VolumeGroupReplication named <group>-<name>.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	ConsistencyGroups []VRGConsistencyGroup `json:"consistencyGroups,omitempty"`

	// protectedNamespaces are the namespaces whose PVCs and objects the group protects; empty
	// means the VolumeReplicationGroup's own namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ProtectedNamespaces []string `json:"protectedNamespaces,omitempty"`

	// s3Profiles are the object stores that receive the PV/PVC metadata and captured objects;
	// the group writes to every one of them.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	S3Profiles []S3Profile `json:"s3Profiles,omitempty"`

	// schedulingInterval is how often the PVCs replicate.
	// +required
	SchedulingInterval SchedulingInterval `json:"schedulingInterval,omitempty"`

	// storageClassBackends chooses each PVC's replication backend from its StorageClass.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.storageClassName) || self.exists_one(b, has(b.storageClassName) && b.storageClassName == a.storageClassName))",message="storageClassBackends must name each storageClassName at most once"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.provisioner) || self.exists_one(b, has(b.provisioner) && b.provisioner == a.provisioner))",message="storageClassBackends must name each provisioner at most once"
	StorageClassBackends []StorageClassBackend `json:"storageClassBackends,omitempty"`

	// volRep configures the VolRep backend.
	// +optional
	VolRep *VolRepSpec `json:"volRep,omitempty"`

	// volSync configures the VolSync backend.
	// +optional
	VolSync *VolSyncSpec `json:"volSync,omitempty"`

	// kubeObjectProtection selects the Kubernetes objects to capture and restore; unset
	// captures none.
	// +optional
	KubeObjectProtection *KubeObjectProtectionSpec `json:"kubeObjectProtection,omitempty"`

	// finalSyncRequest asks a primary for the final sync of a relocation. When it changes to a
	// new value, the agent stops scheduled syncs, waits until no pod or VolumeAttachment uses
	// the PVCs, fences them, syncs every PVC one last time and then sets
	// status.finalSync.request to the same value. The hub uses the relocation's start time.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FinalSyncRequest string `json:"finalSyncRequest,omitempty"`

	// recipe is the application's DRRecipe, copied by the hub: the hooks the agent runs at
	// their points and the order it restores and stops workloads in. Unset runs none.
	// +optional
	Recipe *VRGRecipe `json:"recipe,omitempty"`
}

// LabelConsistencyGroup marks a PVC as a member of a consistency group:
// <VolumeReplicationGroup name>.<group name>. The agent sets it on the PVCs a group selects; the
// storage's group (a VolumeGroupReplication) selects by it.
const LabelConsistencyGroup = "drover.io/consistency-group"

// AnnotationConsistencyGroupHandle records, on a member PVC of a primary's consistency group,
// the storage's handle of the group (VolRep: its VolumeGroupReplicationContent's
// volumeGroupReplicationHandle). It travels with the PVC's metadata to the stores, and the peer's
// promotion restores the group under that handle, as its storage knows the mirrored group.
const AnnotationConsistencyGroupHandle = "drover.io/consistency-group-handle"

// VRGConsistencyGroup is a consistency group as the hub hands it to a managed cluster.
type VRGConsistencyGroup struct {
	// name of the group, as the DRPlacementControl names it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// selector selects the group's PVCs: the group's selector and the pvcSelector together.
	// +required
	// +kubebuilder:validation:XValidation:rule="(!has(self.matchLabels) || size(self.matchLabels) <= 64) && (!has(self.matchExpressions) || (size(self.matchExpressions) <= 64 && self.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64)))",message="a consistency group's selector may hold at most 64 matchLabels and 64 matchExpressions of at most 64 values each"
	Selector metav1.LabelSelector `json:"selector"`
}

// ConsistencyGroupStatus is the state of one consistency group on a managed cluster.
type ConsistencyGroupStatus struct {
	// name of the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// namespace of the group's PVCs.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// backend replicates the group; empty until its members' backend is known.
	// +optional
	Backend ReplicationBackend `json:"backend,omitempty"`

	// members are the names of the group's PVCs, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	Members []string `json:"members,omitempty"`

	// lastSyncTime is the group's recovery point: the instant of the last copy of every member
	// that the peer holds (VolRep: the VolumeGroupReplication's lastSyncTime). Only a primary
	// reports it.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// conditions of the group: DataReady (its replication holds the asked role) and
	// DataProtected (it replicates).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProtectedPVC is the state of one protected PVC.
type ProtectedPVC struct {
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

	// storageClassName is the PVC's StorageClass.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName string `json:"storageClassName,omitempty"`

	// backend replicates the PVC; empty when no storageClassBackends entry matches its class.
	// +optional
	Backend ReplicationBackend `json:"backend,omitempty"`

	// replicationID identifies the backend's replication of the PVC: the VolumeReplicationClass
	// for VolRep, the ReplicationSource or ReplicationDestination for VolSync.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ReplicationID string `json:"replicationID,omitempty"`

	// accessModes are the PVC's access modes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`

	// capacity is the PVC's requested storage.
	// +optional
	Capacity *resource.Quantity `json:"capacity,omitempty"`

	// volumeMode is the PVC's volume mode: a Block PVC is received as Block. Unset means
	// Filesystem.
	// +optional
	// +kubebuilder:validation:Enum=Block;Filesystem
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`

	// consistencyGroup names the consistency group the PVC is replicated with; empty when it is
	// replicated on its own.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ConsistencyGroup string `json:"consistencyGroup,omitempty"`

	// conditions of the PVC: DataReady and DataProtected.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastSyncTime is the PVC's recovery point: when the newest sync the peer is proven to hold
	// started (with VolSync the sync before the source's last completion, whose image the
	// destination may not have taken yet). Only the primary's group reports the syncs (a secondary's PVCs receive them; its status leaves
	// lastSyncTime, lastSyncDuration and lastSyncBytes unset).
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// lastSyncDuration is how long the last sync took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`

	// lastSyncBytes is how many bytes the last sync transferred.
	// +optional
	LastSyncBytes *int64 `json:"lastSyncBytes,omitempty"`

	// moverSecurityContext is who the VolSync movers of the PVC run as: the group's
	// spec.volSync.moverSecurityContext, or what the pods that mount the PVC run as, kept while
	// no pod mounts it (a relocation's final sync, a restore before the application starts).
	// Unset for a PVC of another backend, or when no user is known.
	// +optional
	MoverSecurityContext *VolSyncMoverSecurityContext `json:"moverSecurityContext,omitempty"`
}

// FinalSyncStatus records the last completed final sync.
type FinalSyncStatus struct {
	// request is the spec.finalSyncRequest that the final sync answered.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Request string `json:"request,omitempty"`

	// completionTime is when the final sync completed.
	// +required
	CompletionTime metav1.Time `json:"completionTime"`
}

// VolumeReplicationGroupStatus is the agent's view of one application on one managed cluster.
type VolumeReplicationGroupStatus struct {
	// state is the role the PVCs hold.
	// +optional
	State VRGState `json:"state,omitempty"`

	// protectedPVCs are the state of each selected PVC.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=512
	ProtectedPVCs []ProtectedPVC `json:"protectedPVCs,omitempty"`

	// conditions: DataReady (the PVCs hold the asked role), DataProtected (they replicate),
	// ClusterDataReady (PV/PVC metadata is restored), ClusterDataProtected (it is in every
	// store) and KubeObjectsReady (objects are captured or restored).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// consistencyGroups are the state of each consistency group of spec.consistencyGroups.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	ConsistencyGroups []ConsistencyGroupStatus `json:"consistencyGroups,omitempty"`

	// lastGroupSyncTime is the oldest lastSyncTime of the protected PVCs (a consistency group's
	// members all report the group's): the group's recovery point. With no PVC selected it is the last time every store held the current capture of
	// the group's objects (kubeObjectProtection), which alone protect it then.
	// +optional
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`

	// syncRefreshInterval is how often the storage refreshes the last sync times the group
	// reads, the longest of its PVCs': csi-addons refreshes a primary VolumeReplication's
	// lastSyncTime every schedulingInterval of its class below 2 minutes, every half interval
	// from 2 minutes, and hourly for an interval in days. A healthy lastGroupSyncTime can be up
	// to the interval plus this old. Unset when every sync is reported as it completes.
	// +optional
	SyncRefreshInterval *metav1.Duration `json:"syncRefreshInterval,omitempty"`

	// receivedSyncTime, on a secondary, is the newest point in time up to which this cluster is
	// proven to hold the peer primary's writes to every PVC of the group, read from this
	// cluster's storage alone: the oldest over its VolSync PVCs of the start of the sync before
	// the last one its ReplicationDestination completed (a latest image holds a source snapshot
	// taken after that start). A failover to this cluster loses at most the writes made after
	// it, which is what a failover without the hub reports. Unset when the storage does not say:
	// a VolRep secondary (csi-addons reports lastSyncTime on a primary's VolumeReplication
	// only), and before a destination completed two syncs. The hub does not read it.
	// +optional
	ReceivedSyncTime *metav1.Time `json:"receivedSyncTime,omitempty"`

	// finalSync records the last completed final sync.
	// +optional
	FinalSync *FinalSyncStatus `json:"finalSync,omitempty"`

	// volSyncDestinations, on a secondary, say where each VolSync ReplicationDestination listens.
	// +optional
	// +listType=map
	// +listMapKey=pvcNamespace
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=512
	VolSyncDestinations []VolSyncDestination `json:"volSyncDestinations,omitempty"`

	// hooks are the runs of the recipe's hooks on this cluster for the recipe's action (and the
	// last run of each BeforeSync hook), the latest attempt of each hook.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Hooks []HookRun `json:"hooks,omitempty"`

	// observedGeneration is the generation of the spec the last successful reconcile observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// agentVersion is the version of the agent that wrote this status, for `drover version`.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AgentVersion string `json:"agentVersion,omitempty"`
}

// AnnotationUnprotectAsPrimary set to "true" on a VolumeReplicationGroup the hub deletes asks its
// agent to promote each of the group's VolumeReplications before deleting it. ceph-csi disables
// mirroring only of a primary image; it releases a secondary only while the secondary replays a
// live primary, which a group whose peer is lost, or one of two secondaries (a relocation
// interrupted by the deletion), never does. Promoted, the volume keeps its data as an ordinary
// volume, and disabling its mirroring removes the peer's copy.
const AnnotationUnprotectAsPrimary = "drover.io/unprotect-as-primary"

// VolumeReplicationGroup protects the selected PVCs and objects of one application on one
// managed cluster, as primary or secondary. The hub creates it through the cluster gateway.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=vrg,categories=drover
// +kubebuilder:printcolumn:name="DesiredState",type=string,JSONPath=`.spec.replicationState`
// +kubebuilder:printcolumn:name="CurrentState",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="LastSync",type=date,JSONPath=`.status.lastGroupSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeReplicationGroup struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the VolumeReplicationGroup.
	// +required
	Spec VolumeReplicationGroupSpec `json:"spec"`

	// status is the observed state of the VolumeReplicationGroup.
	// +optional
	Status VolumeReplicationGroupStatus `json:"status,omitempty"`
}

// FinalSyncComplete reports whether the final sync asked by spec.finalSyncRequest has completed.
// It is false when no final sync is asked.
func (v *VolumeReplicationGroup) FinalSyncComplete() bool {
	return v.Spec.FinalSyncRequest != "" && v.Status.FinalSync != nil &&
		v.Status.FinalSync.Request == v.Spec.FinalSyncRequest
}

// GetConditions returns the VolumeReplicationGroup's conditions.
func (v *VolumeReplicationGroup) GetConditions() []metav1.Condition { return v.Status.Conditions }

// SetConditions replaces the VolumeReplicationGroup's conditions.
func (v *VolumeReplicationGroup) SetConditions(conditions []metav1.Condition) {
	v.Status.Conditions = conditions
}

// VolumeReplicationGroupList is a list of VolumeReplicationGroups.
//
// +kubebuilder:object:root=true
type VolumeReplicationGroupList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeReplicationGroups.
	Items []VolumeReplicationGroup `json:"items"`
}
