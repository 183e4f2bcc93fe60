package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeconfigSecretKey is the key of the kubeconfig in the Secret named by
// DRCluster.spec.kubeconfigSecretRef.
const KubeconfigSecretKey = "kubeconfig"

// DRClusterSpec says how the hub reaches a managed cluster and where that cluster keeps its copy
// of the protected applications' metadata.
type DRClusterSpec struct {
	// kubeconfigSecretRef names the Secret on the hub whose key "kubeconfig" holds a kubeconfig
	// for the cluster. Its credential should be allowed to manage drover's resources only.
	// +required
	KubeconfigSecretRef SecretRef `json:"kubeconfigSecretRef"`

	// s3ProfileName names the S3 profile hosted by this cluster. Each DRPolicy that pairs the
	// cluster defines the profile in its spec.s3Profiles.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	S3ProfileName string `json:"s3ProfileName,omitempty"`

	// region is the failure domain of the cluster, such as a cloud region or a data centre.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`

	// argoCDClusterName is the cluster's name in Argo CD, when it differs from the DRCluster's
	// name. drover writes it into PlacementDecisions for applications protected by placementRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ArgoCDClusterName string `json:"argoCDClusterName,omitempty"`
}

// DRClusterStatus is the hub's view of a managed cluster.
type DRClusterStatus struct {
	// conditions: Validated (the spec and its Secret are usable), Reachable (the health probe
	// succeeds, with a grace period before it turns False) and Fenced.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec the last successful reconcile observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DRCluster is a managed cluster that drover can fail applications over to and relocate them
// from. It lives on the hub.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=drover
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Validated",type=string,JSONPath=`.status.conditions[?(@.type=="Validated")].status`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the DRCluster.
	// +required
	Spec DRClusterSpec `json:"spec"`

	// status is the observed state of the DRCluster.
	// +optional
	Status DRClusterStatus `json:"status,omitempty"`
}

// GetConditions returns the DRCluster's conditions.
func (c *DRCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the DRCluster's conditions.
func (c *DRCluster) SetConditions(conditions []metav1.Condition) { c.Status.Conditions = conditions }

// DRClusterList is a list of DRClusters.
//
// +kubebuilder:object:root=true
type DRClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the DRClusters.
	Items []DRCluster `json:"items"`
}
