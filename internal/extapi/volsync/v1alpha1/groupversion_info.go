// Package v1alpha1 is a minimal copy of VolSync's volsync.backube/v1alpha1 API
// (github.com/backube/volsync, api/v1alpha1): the rsync-tls fields of ReplicationSource and
// ReplicationDestination that drover uses. Upstream nests some of these fields in inlined
// structs; the JSON is the same.
//
// +kubebuilder:object:generate=true
// +groupName=volsync.backube
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "volsync.backube", Version: "v1alpha1"}

	// SchemeBuilder collects the functions that register this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ReplicationSource{}, &ReplicationSourceList{},
		&ReplicationDestination{}, &ReplicationDestinationList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
