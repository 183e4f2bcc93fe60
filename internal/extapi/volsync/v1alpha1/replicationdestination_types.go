package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationDestinationRsyncTLSSpec configures rsync over TLS on the receiving side.
type ReplicationDestinationRsyncTLSSpec struct {
	// copyMethod is how the point-in-time image of the destination volume is made.
	// +optional
	CopyMethod CopyMethodType `json:"copyMethod,omitempty"`
	// capacity is the size of the destination volume to create.
	// +optional
	Capacity *resource.Quantity `json:"capacity,omitempty"`
	// storageClassName is the StorageClass of the destination volume.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// accessModes are the access modes of the destination volume.
	// +optional
	// +kubebuilder:validation:MinItems=1
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// volumeMode is the volume mode of the destination volume VolSync creates (Block or
	// Filesystem); Filesystem when unset.
	// +optional
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`
	// volumeSnapshotClassName is the VolumeSnapshotClass used when copyMethod is Snapshot.
	// +optional
	VolumeSnapshotClassName *string `json:"volumeSnapshotClassName,omitempty"`
	// destinationPVC is an existing PVC to receive into instead of a provisioned one.
	// +optional
	DestinationPVC *string `json:"destinationPVC,omitempty"`
	// keySecret names the Secret holding the TLS pre-shared key.
	// +optional
	KeySecret *string `json:"keySecret,omitempty"`
	// serviceType is the type of the Service created for incoming connections.
	// +optional
	ServiceType *corev1.ServiceType `json:"serviceType,omitempty"`
	// moverSecurityContext is the PodSecurityContext of the mover's pod (upstream's inline
	// MoverConfig).
	// +optional
	MoverSecurityContext *corev1.PodSecurityContext `json:"moverSecurityContext,omitempty"`
}

// ReplicationDestinationSpec is the desired state of a ReplicationDestination.
type ReplicationDestinationSpec struct {
	// trigger says when the destination synchronizes.
	// +optional
	Trigger *TriggerSpec `json:"trigger,omitempty"`
	// rsyncTLS configures rsync over TLS.
	// +optional
	RsyncTLS *ReplicationDestinationRsyncTLSSpec `json:"rsyncTLS,omitempty"`
	// paused stops replication temporarily.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ReplicationDestinationRsyncTLSStatus is the rsync-tls status of a ReplicationDestination.
type ReplicationDestinationRsyncTLSStatus struct {
	// keySecret names the Secret holding the TLS pre-shared key.
	// +optional
	KeySecret *string `json:"keySecret,omitempty"`
	// address is where the destination accepts incoming connections.
	// +optional
	Address *string `json:"address,omitempty"`
	// port is the port of incoming connections.
	// +optional
	Port *int32 `json:"port,omitempty"`
}

// ReplicationDestinationStatus is the observed state of a ReplicationDestination.
type ReplicationDestinationStatus struct {
	// lastSyncTime is when the last successful synchronization completed.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// lastSyncStartTime is when the last synchronization started.
	// +optional
	LastSyncStartTime *metav1.Time `json:"lastSyncStartTime,omitempty"`
	// lastSyncDuration is how long the last synchronization took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
	// lastManualSync is the spec.trigger.manual of the last completed manual synchronization.
	// +optional
	LastManualSync string `json:"lastManualSync,omitempty"`
	// latestImage is the most recent consistent replicated image, a VolumeSnapshot or a PVC.
	// +optional
	LatestImage *corev1.TypedLocalObjectReference `json:"latestImage,omitempty"`
	// rsyncTLS is the rsync-tls status.
	// +optional
	RsyncTLS *ReplicationDestinationRsyncTLSStatus `json:"rsyncTLS,omitempty"`
	// conditions of the ReplicationDestination.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationDestination receives a volume from a ReplicationSource.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Last sync",type=string,format=date-time,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.lastSyncDuration`
type ReplicationDestination struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the ReplicationDestination.
	// +optional
	Spec ReplicationDestinationSpec `json:"spec,omitempty"`

	// status is the observed state of the ReplicationDestination.
	// +optional
	Status *ReplicationDestinationStatus `json:"status,omitempty"`
}

// ReplicationDestinationList is a list of ReplicationDestinations.
//
// +kubebuilder:object:root=true
type ReplicationDestinationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the ReplicationDestinations.
	Items []ReplicationDestination `json:"items"`
}
