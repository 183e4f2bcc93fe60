package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationState is the replication operation asked of a volume.
// +kubebuilder:validation:Enum=primary;secondary;resync
type ReplicationState string

const (
	// Primary promotes the volume to primary and mirrors it to the secondary.
	Primary ReplicationState = "primary"
	// Secondary demotes the volume to secondary.
	Secondary ReplicationState = "secondary"
	// Resync resyncs the volume from the primary, discarding local changes.
	Resync ReplicationState = "resync"
)

// State is the replication state a volume holds, as observed.
type State string

const (
	// PrimaryState means the volume is primary.
	PrimaryState State = "Primary"
	// SecondaryState means the volume is secondary.
	SecondaryState State = "Secondary"
	// UnknownState means the state is unknown.
	UnknownState State = "Unknown"
)

// Condition types of a VolumeReplication.
const (
	// ConditionCompleted is True when the last requested operation completed.
	ConditionCompleted = "Completed"
	// ConditionDegraded is True when the replication is degraded.
	ConditionDegraded = "Degraded"
	// ConditionResyncing is True while the volume resyncs.
	ConditionResyncing = "Resyncing"
	// ConditionValidated is True when the prerequisites are met.
	ConditionValidated = "Validated"
	// ConditionReplicating is True while the volume replicates.
	ConditionReplicating = "Replicating"
)

// ReasonResyncTriggered is the reason of Resyncing True: the driver accepted the resync of a
// secondary and reports it not ready, which ceph-csi does while the secondary replays a live
// primary (up+replaying); other states fail the resync (FailedToResync).
const ReasonResyncTriggered = "ResyncTriggered"

// ReasonFailedToDemote is the reason of Completed False when the driver refused or failed a
// demotion; Degraded is then True with ReasonError and a message ending with the driver's error.
const ReasonFailedToDemote = "FailedToDemote"

// ReasonError is the reason of Degraded True when the last request to the driver failed.
const ReasonError = "Error"

// VolumeReplicationSpec is the desired replication of one volume.
type VolumeReplicationSpec struct {
	// volumeReplicationClass names the VolumeReplicationClass. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeReplicationClass is immutable"
	VolumeReplicationClass string `json:"volumeReplicationClass"`

	// replicationState is the operation asked of the volume.
	// +required
	ReplicationState ReplicationState `json:"replicationState"`

	// dataSource is the replicated object, a PersistentVolumeClaim. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="dataSource is immutable"
	DataSource corev1.TypedLocalObjectReference `json:"dataSource"`

	// autoResync resyncs the volume automatically while replicationState is secondary. Upstream
	// requires it and defaults it to false, so an object without it is still accepted.
	// +required
	// +kubebuilder:default:=false
	AutoResync bool `json:"autoResync"`
}

// VolumeReplicationStatus is the observed replication of one volume.
type VolumeReplicationStatus struct {
	// state is the replication state of the volume.
	// +optional
	State State `json:"state,omitempty"`
	// message explains the state.
	// +optional
	Message string `json:"message,omitempty"`
	// conditions of the replication.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the last generation the replicator acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// lastCompletionTime is when the last operation completed.
	// +optional
	LastCompletionTime *metav1.Time `json:"lastCompletionTime,omitempty"`
	// lastSyncTime is the time of the last completed sync.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// lastSyncBytes is how many bytes the last sync transferred.
	// +optional
	LastSyncBytes *int64 `json:"lastSyncBytes,omitempty"`
	// lastSyncDuration is how long the last sync took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
}

// VolumeReplication asks the storage to replicate one volume.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vr
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="volumeReplicationClass",type=string,JSONPath=`.spec.volumeReplicationClass`
// +kubebuilder:printcolumn:name="SourceName",type=string,JSONPath=`.spec.dataSource.name`
// +kubebuilder:printcolumn:name="desiredState",type=string,JSONPath=`.spec.replicationState`
// +kubebuilder:printcolumn:name="currentState",type=string,JSONPath=`.status.state`
type VolumeReplication struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired replication.
	// +required
	Spec VolumeReplicationSpec `json:"spec"`

	// status is the observed replication.
	// +optional
	Status VolumeReplicationStatus `json:"status,omitempty"`
}

// VolumeReplicationList is a list of VolumeReplications.
//
// +kubebuilder:object:root=true
type VolumeReplicationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeReplications.
	Items []VolumeReplication `json:"items"`
}
