package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceExport declares that the Service of the same name and namespace is to be exported to
// the other clusters of the clusterset.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=svcex
type ServiceExport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is empty: the ServiceExport's name and namespace name the Service.
	// +optional
	Spec ServiceExportSpec `json:"spec,omitempty"`
	// status is written by the MCS implementation.
	// +optional
	Status ServiceExportStatus `json:"status,omitempty"`
}

// ServiceExportSpec carries no field drover sets.
type ServiceExportSpec struct{}

// ServiceExportStatus is the export's state.
type ServiceExportStatus struct {
	// conditions say whether the export is valid (Valid) and exported (Ready).
	// +optional
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ServiceExportList is a list of ServiceExports.
//
// +kubebuilder:object:root=true
type ServiceExportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceExport `json:"items"`
}

// Condition types and reasons of the MCS API (KEP-1645).
const (
	// ConditionValid is True when the export is valid: its Service exists and is of a type
	// that can be exported.
	ConditionValid = "Valid"
	// ConditionReady is True once the Service is exported to the clusterset.
	ConditionReady = "Ready"

	// ReasonValid: the export is valid.
	ReasonValid = "Valid"
	// ReasonNoService: no Service of the export's name exists in its namespace.
	ReasonNoService = "NoService"
	// ReasonInvalidServiceType: the Service's type cannot be exported (ExternalName).
	ReasonInvalidServiceType = "InvalidServiceType"
	// ReasonExported: the Service is exported.
	ReasonExported = "Exported"
	// ReasonPending: the export is being processed.
	ReasonPending = "Pending"
)

// ClustersetDomain is the DNS zone of exported Services: NAME.NAMESPACE.svc.clusterset.local.
const ClustersetDomain = "svc.clusterset.local"
