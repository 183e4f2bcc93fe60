// Package v1beta1 is a minimal copy of Open Cluster Management's
// cluster.open-cluster-management.io/v1beta1 API (github.com/open-cluster-management-io/api,
// cluster/v1beta1): the PlacementDecision that drover writes for applications protected by
// placementRef, and that GitOps tools read to deploy them, and the Placement whose scheduling
// drover disables while it writes them.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "cluster.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder collects the functions that register this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Placement{}, &PlacementList{}, &PlacementDecision{}, &PlacementDecisionList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
