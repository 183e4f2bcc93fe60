package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationSourceRsyncTLSSpec configures rsync over TLS on the sending side.
type ReplicationSourceRsyncTLSSpec struct {
	// copyMethod is how the point-in-time image of the source volume is made.
	// +optional
	CopyMethod CopyMethodType `json:"copyMethod,omitempty"`
	// storageClassName overrides the StorageClass of the point-in-time image.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// accessModes overrides the access modes of the point-in-time image.
	// +optional
	// +kubebuilder:validation:MinItems=1
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// volumeSnapshotClassName is the VolumeSnapshotClass used when copyMethod is Snapshot.
	// +optional
	VolumeSnapshotClassName *string `json:"volumeSnapshotClassName,omitempty"`
	// keySecret names the Secret holding the TLS pre-shared key.
	// +optional
	KeySecret *string `json:"keySecret,omitempty"`
	// address is the remote address to connect to.
	// +optional
	Address *string `json:"address,omitempty"`
	// port is the remote port; VolSync defaults it to 8000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`
	// moverSecurityContext is the PodSecurityContext of the mover's pod (upstream's inline
	// MoverConfig).
	// +optional
	MoverSecurityContext *corev1.PodSecurityContext `json:"moverSecurityContext,omitempty"`
}

// ReplicationSourceSpec is the desired state of a ReplicationSource.
type ReplicationSourceSpec struct {
	// sourcePVC is the PVC to replicate.
	// +optional
	SourcePVC string `json:"sourcePVC,omitempty"`
	// trigger says when the volume synchronizes.
	// +optional
	Trigger *TriggerSpec `json:"trigger,omitempty"`
	// rsyncTLS configures rsync over TLS.
	// +optional
	RsyncTLS *ReplicationSourceRsyncTLSSpec `json:"rsyncTLS,omitempty"`
	// paused stops replication temporarily.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ReplicationSourceRsyncTLSStatus is the rsync-tls status of a ReplicationSource.
type ReplicationSourceRsyncTLSStatus struct {
	// keySecret names the Secret holding the TLS pre-shared key.
	// +optional
	KeySecret *string `json:"keySecret,omitempty"`
}

// ReplicationSourceStatus is the observed state of a ReplicationSource.
type ReplicationSourceStatus struct {
	// lastSyncTime is when the last successful synchronization completed.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// lastSyncStartTime is when the last synchronization started.
	// +optional
	LastSyncStartTime *metav1.Time `json:"lastSyncStartTime,omitempty"`
	// lastSyncDuration is how long the last synchronization took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
	// nextSyncTime is when the next scheduled synchronization starts.
	// +optional
	NextSyncTime *metav1.Time `json:"nextSyncTime,omitempty"`
	// lastManualSync is the spec.trigger.manual of the last completed manual synchronization.
	// +optional
	LastManualSync string `json:"lastManualSync,omitempty"`
	// rsyncTLS is the rsync-tls status.
	// +optional
	RsyncTLS *ReplicationSourceRsyncTLSStatus `json:"rsyncTLS,omitempty"`
	// latestMoverStatus is the result and log tail of the latest mover Job.
	// +optional
	LatestMoverStatus *MoverStatus `json:"latestMoverStatus,omitempty"`
	// conditions of the ReplicationSource.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationSource sends a volume to a ReplicationDestination.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourcePVC`
// +kubebuilder:printcolumn:name="Last sync",type=string,format=date-time,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.lastSyncDuration`
// +kubebuilder:printcolumn:name="Next sync",type=string,format=date-time,JSONPath=`.status.nextSyncTime`
type ReplicationSource struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the ReplicationSource.
	// +optional
	Spec ReplicationSourceSpec `json:"spec,omitempty"`

	// status is the observed state of the ReplicationSource.
	// +optional
	Status *ReplicationSourceStatus `json:"status,omitempty"`
}

// ReplicationSourceList is a list of ReplicationSources.
//
// +kubebuilder:object:root=true
type ReplicationSourceList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the ReplicationSources.
	Items []ReplicationSource `json:"items"`
}
