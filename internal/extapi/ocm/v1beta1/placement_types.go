package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementDisableAnnotation is the annotation that, set to "true" on a Placement, makes OCM's placement controller
// leave the Placement and its PlacementDecisions alone, so that another controller can write
// the decisions (open-cluster-management-io/api cluster/v1beta1/types_placement.go,
// PlacementDisableAnnotation; honoured in open-cluster-management-io/ocm
// pkg/placement/controllers/scheduling/scheduling_controller.go, syncPlacement). Without it the
// placement controller writes <placement>-decision-<n> itself and deletes every other decision
// labelled with the placement's name.
const PlacementDisableAnnotation = "cluster.open-cluster-management.io/experimental-scheduling-disable"

// PlacementSpec holds the attributes of a Placement that drover and the lab use. An empty spec
// selects every cluster the placement may use.
type PlacementSpec struct {
	// numberOfClusters is how many clusters the placement selects; all of them when unset.
	// +optional
	NumberOfClusters *int32 `json:"numberOfClusters,omitempty"`
}

// PlacementStatus is what the placement controller reports of a Placement.
type PlacementStatus struct {
	// numberOfSelectedClusters is how many clusters the decisions name.
	// +optional
	NumberOfSelectedClusters int32 `json:"numberOfSelectedClusters"`
}

// Placement is a rule that selects clusters; its PlacementDecisions (labelled PlacementLabel
// with its name) name the clusters selected.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="SelectedClusters",type="integer",JSONPath=".status.numberOfSelectedClusters"
type Placement struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the placement's attributes.
	// +required
	Spec PlacementSpec `json:"spec"`

	// status is what the placement controller reports.
	// +optional
	Status PlacementStatus `json:"status,omitempty"`
}

// PlacementList is a list of Placements.
//
// +kubebuilder:object:root=true
type PlacementList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Placements.
	Items []Placement `json:"items"`
}
