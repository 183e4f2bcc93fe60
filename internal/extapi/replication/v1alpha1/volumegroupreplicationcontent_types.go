package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeGroupReplicationContentSpec is the storage's group of volumes behind a
// VolumeGroupReplication.
type VolumeGroupReplicationContentSpec struct {
	// volumeGroupReplicationHandle is the group's id in the storage, set once the storage has
	// grouped the volumes.
	// +optional
	VolumeGroupReplicationHandle string `json:"volumeGroupReplicationHandle,omitempty"`

	// volumeGroupReplicationRef is the VolumeGroupReplication this content belongs to.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self != null ? has(self.name) && has(self.__namespace__) && has(self.uid) : true",message="volumeGroupReplicationRef.name, volumeGroupReplicationRef.namespace and volumeGroupReplicationRef.uid must be set if volumeGroupReplicationRef is defined"
	VolumeGroupReplicationRef *corev1.ObjectReference `json:"volumeGroupReplicationRef,omitempty"`

	// provisioner is the CSI driver of the group's volumes.
	// +required
	Provisioner string `json:"provisioner"`

	// volumeGroupReplicationClassName names the VolumeGroupReplicationClass.
	// +required
	VolumeGroupReplicationClassName string `json:"volumeGroupReplicationClassName"`

	// source lists the volumes of the group.
	// +required
	Source VolumeGroupReplicationContentSource `json:"source"`
}

// VolumeGroupReplicationContentSource lists a group's volumes by their handles.
type VolumeGroupReplicationContentSource struct {
	// volumeHandles are the CSI volume handles of the group's volumes.
	// +required
	VolumeHandles []string `json:"volumeHandles"`
}

// PersistentVolumeMapping is a PV of the group and its volume handle.
type PersistentVolumeMapping struct {
	// name is the PV's name.
	// +required
	Name string `json:"name"`
	// volumeHandle is the PV's CSI volume handle.
	// +required
	VolumeHandle string `json:"volumeHandle"`
}

// VolumeGroupReplicationContentStatus lists the PVs of the group.
type VolumeGroupReplicationContentStatus struct {
	// persistentVolumeRefList are the PVs of the group (deprecated upstream for
	// persistentVolumeMappingList, and still written).
	// +optional
	PersistentVolumeRefList []corev1.LocalObjectReference `json:"persistentVolumeRefList,omitempty"`
	// persistentVolumeMappingList are the PVs of the group with their volume handles.
	// +optional
	PersistentVolumeMappingList []PersistentVolumeMapping `json:"persistentVolumeMappingList,omitempty"`
}

// VolumeGroupReplicationContent is the storage's group of volumes behind a
// VolumeGroupReplication.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=vgrcontent
// +kubebuilder:printcolumn:name="VolumeGroupReplicationClass",type=string,JSONPath=`.spec.volumeGroupReplicationClassName`
// +kubebuilder:printcolumn:name="VolumeGroupReplication",type=string,JSONPath=`.spec.volumeGroupReplicationRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeGroupReplicationContent struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the group.
	// +optional
	Spec VolumeGroupReplicationContentSpec `json:"spec,omitempty"`

	// status lists the group's PVs.
	// +optional
	Status VolumeGroupReplicationContentStatus `json:"status,omitempty"`
}

// VolumeGroupReplicationContentList is a list of VolumeGroupReplicationContents.
//
// +kubebuilder:object:root=true
type VolumeGroupReplicationContentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the VolumeGroupReplicationContents.
	Items []VolumeGroupReplicationContent `json:"items"`
}
