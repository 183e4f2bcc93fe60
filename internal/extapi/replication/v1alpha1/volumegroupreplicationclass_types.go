package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeGroupReplicationClassSpec holds the storage-specific parameters of group replicas.
// +kubebuilder:validation:XValidation:rule="has(self.parameters) == has(oldSelf.parameters)",message="parameters are immutable"
type VolumeGroupReplicationClassSpec struct {
	// provisioner is the CSI driver that replicates the group. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="provisioner is immutable"
	Provisioner string `json:"provisioner"`

	// parameters are the driver's group replication parameters. They cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parameters are immutable"
	Parameters map[string]string `json:"parameters,omitempty"`
}

// VolumeGroupReplicationClassStatus is empty, as upstream.
type VolumeGroupReplicationClassStatus struct{}

// VolumeGroupReplicationClass is a class of group replication offered by a CSI driver.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=vgrc
// +kubebuilder:printcolumn:name="provisioner",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeGroupReplicationClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the class's parameters.
	// +optional
	Spec VolumeGroupReplicationClassSpec `json:"spec,omitempty"`

	// status is empty.
	// +optional
	Status VolumeGroupReplicationClassStatus `json:"status,omitempty"`
}

// VolumeGroupReplicationClassList is a list of VolumeGroupReplicationClasses.
//
// +kubebuilder:object:root=true
type VolumeGroupReplicationClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeGroupReplicationClasses.
	Items []VolumeGroupReplicationClass `json:"items"`
}
