// Package v1alpha1 is a minimal copy of csi-addons' replication.storage.openshift.io/v1alpha1
// API (github.com/csi-addons/kubernetes-csi-addons, api/replication.storage/v1alpha1): the
// fields of VolumeReplication and VolumeReplicationClass that drover uses, and of
// VolumeGroupReplication, its Content and its Class that the lab's storage serves.
//
// +kubebuilder:object:generate=true
// +groupName=replication.storage.openshift.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "replication.storage.openshift.io", Version: "v1alpha1"}

	// SchemeBuilder collects the functions that register this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&VolumeReplication{}, &VolumeReplicationList{},
		&VolumeReplicationClass{}, &VolumeReplicationClassList{},
		&VolumeGroupReplication{}, &VolumeGroupReplicationList{},
		&VolumeGroupReplicationContent{}, &VolumeGroupReplicationContentList{},
		&VolumeGroupReplicationClass{}, &VolumeGroupReplicationClassList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
