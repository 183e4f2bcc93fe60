package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeGroupReplicationSpec is the desired replication of a group of volumes: the PVCs of its
// namespace that its selector matches, replicated together from one instant.
type VolumeGroupReplicationSpec struct {
	// volumeGroupReplicationClassName names the VolumeGroupReplicationClass. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeGroupReplicationClassName is immutable"
	VolumeGroupReplicationClassName string `json:"volumeGroupReplicationClassName"`

	// volumeReplicationClassName names the VolumeReplicationClass of the VolumeReplication that
	// drives the group. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeReplicationClassName is immutable"
	VolumeReplicationClassName string `json:"volumeReplicationClassName"`

	// volumeReplicationName names the VolumeReplication that drives the group; the controller
	// sets it when empty. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeReplicationName is immutable"
	VolumeReplicationName string `json:"volumeReplicationName,omitempty"`

	// volumeGroupReplicationContentName names the group's VolumeGroupReplicationContent; the
	// controller sets it when empty. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeGroupReplicationContentName is immutable"
	VolumeGroupReplicationContentName string `json:"volumeGroupReplicationContentName,omitempty"`

	// source selects the group's PVCs. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable"
	Source VolumeGroupReplicationSource `json:"source"`

	// replicationState is the operation asked of the group.
	// +required
	ReplicationState ReplicationState `json:"replicationState"`

	// autoResync resyncs the group automatically while replicationState is secondary.
	// +required
	// +kubebuilder:default:=false
	AutoResync bool `json:"autoResync"`
}

// VolumeGroupReplicationSource selects the PVCs of a group.
type VolumeGroupReplicationSource struct {
	// selector is a label query over the PVCs of the namespace. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// VolumeGroupReplicationStatus is the observed replication of the group: its VolumeReplication's
// status, and the PVCs in the group.
type VolumeGroupReplicationStatus struct {
	VolumeReplicationStatus `json:",inline"`
	// persistentVolumeClaimsRefList are the PVCs of the group.
	// +optional
	PersistentVolumeClaimsRefList []corev1.LocalObjectReference `json:"persistentVolumeClaimsRefList,omitempty"`
}

// VolumeGroupReplication asks the storage to replicate a group of volumes from one instant.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vgr
// +kubebuilder:printcolumn:name="VolumeGroupReplicationClass",type=string,JSONPath=`.spec.volumeGroupReplicationClassName`
// +kubebuilder:printcolumn:name="VolumeGroupReplicationContent",type=string,JSONPath=`.spec.volumeGroupReplicationContentName`
// +kubebuilder:printcolumn:name="desiredState",type=string,JSONPath=`.spec.replicationState`
// +kubebuilder:printcolumn:name="currentState",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeGroupReplication struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired replication. Optional in the schema, as upstream.
	// +optional
	Spec VolumeGroupReplicationSpec `json:"spec,omitempty"`

	// status is the observed replication.
	// +optional
	Status VolumeGroupReplicationStatus `json:"status,omitempty"`
}

// VolumeGroupReplicationList is a list of VolumeGroupReplications.
//
// +kubebuilder:object:root=true
type VolumeGroupReplicationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeGroupReplications.
	Items []VolumeGroupReplication `json:"items"`
}
