package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeReplicationClassSpec holds the storage-specific parameters of volume replicas.
type VolumeReplicationClassSpec struct {
	// provisioner is the CSI driver that replicates. It cannot change.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="provisioner is immutable"
	Provisioner string `json:"provisioner"`

	// parameters are the driver's replication parameters, such as schedulingInterval. They
	// cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parameters are immutable"
	Parameters map[string]string `json:"parameters,omitempty"`
}

// VolumeReplicationClassStatus is empty, as upstream.
type VolumeReplicationClassStatus struct{}

// VolumeReplicationClass is a class of volume replication offered by a CSI driver.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=vrc
// +kubebuilder:printcolumn:name="provisioner",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeReplicationClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the class's parameters.
	// +required
	Spec VolumeReplicationClassSpec `json:"spec"`

	// status is empty.
	// +optional
	Status VolumeReplicationClassStatus `json:"status,omitempty"`
}

// VolumeReplicationClassList is a list of VolumeReplicationClasses.
//
// +kubebuilder:object:root=true
type VolumeReplicationClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeReplicationClasses.
	Items []VolumeReplicationClass `json:"items"`
}
