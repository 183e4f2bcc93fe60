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

	// lost declares the cluster permanently lost (`drover cluster lost NAME`). While it is set,
	// nothing waits for the cluster: a DRPlacementControl is deleted without it (its group
	// there is recorded in status.groupsToRemove) and no action may target it. If the cluster
	// answers again, the hub first demotes the groups there whose application now runs on the
	// peer, then removes those recorded. Remove the field once the cluster is back and its
	// Fenced condition says nothing there is primary any more.
	// +optional
	Lost *DRClusterLost `json:"lost,omitempty"`
}

// DRClusterLost is a person's declaration that a cluster is gone for good.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.lost cannot be changed once set: remove it, then declare the cluster lost again"
type DRClusterLost struct {
	// reason says why the cluster is declared lost, for the record: the hub repeats it in the
	// Fenced condition and in the ClusterDeclaredLost event.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="spec.lost.reason must say why the cluster is lost"
	Reason string `json:"reason"`
}

// AnnotationLostDeclaredByRestore marks a DRCluster that `drover hub restore` created declared
// lost, because the cluster did not answer when the hub was restored (its value: when, RFC
// 3339; docs/decisions/0018-a-restore-declares-a-silent-cluster-lost.md). Such a DRCluster has
// no kubeconfig Secret: the restore cannot join a cluster that does not answer. A later restore
// that finds the cluster answering joins it and lifts the declaration it made; a declaration
// without this annotation is a person's, and only a person lifts it.
const AnnotationLostDeclaredByRestore = "drover.io/lost-declared-by-restore"

// GroupRef names a VolumeReplicationGroup on a managed cluster.
type GroupRef struct {
	// namespace of the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// demote is true when the application ran on the peer when its DRPlacementControl was
	// deleted: the group may be a stale primary and is demoted before it is removed.
	// +optional
	Demote bool `json:"demote,omitempty"`
}

// Declaring a cluster lost: the reasons of its Fenced condition and its events.
const (
	// ReasonDeclaredLost (Fenced): spec.lost is set and the cluster does not answer.
	ReasonDeclaredLost = "DeclaredLost"
	// ReasonLostClusterReturned (Fenced): spec.lost is set and the cluster answers again: the
	// hub demotes and removes the groups there that it must.
	ReasonLostClusterReturned = "LostClusterReturned"
	// ReasonClusterDeclaredLost (DRPlacementControl ActionAccepted): the action targets a
	// cluster declared lost. (DRPlacementControl Protected): the peer is declared lost and does
	// not answer, so the application's data has no second copy.
	ReasonClusterDeclaredLost = "ClusterDeclaredLost"
	// EventClusterDeclaredLost: spec.lost was set on a DRCluster.
	EventClusterDeclaredLost = "ClusterDeclaredLost"
	// EventLostClusterReturned: a cluster declared lost answered again.
	EventLostClusterReturned = "LostClusterReturned"
	// EventClusterLostCleared: spec.lost was removed.
	EventClusterLostCleared = "ClusterLostCleared"
	// EventGroupDemoted: the hub demoted a group left on a returning cluster.
	EventGroupDemoted = "LeftGroupDemoted"
	// EventGroupRemoved: the hub removed a group left on a returning cluster.
	EventGroupRemoved = "LeftGroupRemoved"
)

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

	// groupsToRemove are the VolumeReplicationGroups of deleted DRPlacementControls left on
	// this cluster while it was lost. The hub removes them (demoting first where asked) as soon
	// as the cluster answers, and then drops them from this list.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	GroupsToRemove []GroupRef `json:"groupsToRemove,omitempty"`

	// hubVersion is the version of the hub that last wrote this status, for `drover version`.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	HubVersion string `json:"hubVersion,omitempty"`
}

// DRCluster is a managed cluster that drover can fail applications over to and relocate them
// from. It lives on the hub.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=drover
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Validated",type=string,JSONPath=`.status.conditions[?(@.type=="Validated")].status`
// +kubebuilder:printcolumn:name="Lost",type=string,JSONPath=`.spec.lost.reason`,priority=1
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
