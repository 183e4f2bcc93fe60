// Package v1alpha1 is a minimal copy of the Multi-Cluster Services API's
// multicluster.x-k8s.io/v1alpha1 ServiceExport (KEP-1645; github.com/kubernetes-sigs/mcs-api,
// pkg/apis/v1alpha1/serviceexport.go): a ServiceExport named like a Service of its namespace
// asks the cluster's MCS implementation to make that Service reachable from every cluster of
// the clusterset at NAME.NAMESPACE.svc.clusterset.local. drover sets no spec field; it reads
// the Valid and Ready conditions the implementation writes.
//
// +kubebuilder:object:generate=true
// +groupName=multicluster.x-k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1alpha1"}

	// SchemeBuilder collects the functions that register this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ServiceExport{}, &ServiceExportList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
