package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementLabel is the label of a PlacementDecision that names its Placement.
const PlacementLabel = "cluster.open-cluster-management.io/placement"

// ClusterDecision is one cluster chosen by a placement. An empty clusterName means the decision
// is not scheduled yet.
type ClusterDecision struct {
	// clusterName is the name of the chosen cluster.
	// +required
	ClusterName string `json:"clusterName"`

	// reason says why the cluster was chosen.
	// +required
	Reason string `json:"reason"`
}

// PlacementDecisionStatus holds the decisions of a placement.
type PlacementDecisionStatus struct {
	// decisions are the chosen clusters; at most 100.
	// +required
	Decisions []ClusterDecision `json:"decisions"`
}

// PlacementDecision records where a placement puts its workloads. It carries PlacementLabel.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
type PlacementDecision struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status holds the decisions.
	// +optional
	Status PlacementDecisionStatus `json:"status,omitempty"`
}

// PlacementDecisionList is a list of PlacementDecisions.
//
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the PlacementDecisions.
	Items []PlacementDecision `json:"items"`
}
