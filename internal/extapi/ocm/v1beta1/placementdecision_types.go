package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels OCM's placement controller puts on every PlacementDecision it writes
// (open-cluster-management-io/api cluster/v1beta1/types_placementdecision.go; written in
// open-cluster-management-io/ocm pkg/placement/controllers/scheduling/scheduling_controller.go,
// generateDecision). OCM's decision tracker (open-cluster-management-io/sdk-go
// pkg/apis/cluster/v1beta1/placement.go, used by ManifestWorkReplicaSet and add-on rollouts)
// parses the group index of every decision of a placement and fails with "incorrect group
// index" on one that lacks it.
const (
	// PlacementLabel names the decision's Placement.
	PlacementLabel = "cluster.open-cluster-management.io/placement"
	// DecisionGroupNameLabel names the decision group; empty for the default group, which is
	// the only one of a Placement without spec.decisionStrategy.
	DecisionGroupNameLabel = "cluster.open-cluster-management.io/decision-group-name"
	// DecisionGroupIndexLabel is the index of the decision group, "0" for the first.
	DecisionGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index"
)

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
