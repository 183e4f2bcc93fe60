package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of drover's resources.
const GroupName = "drover.io"

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder collects the functions that register this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource for an unqualified resource name, as
// apierrors.NewNotFound and friends want it.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

// addKnownTypes registers the types by hand: controller-runtime's scheme.Builder would be
// shorter, but the api package may import only the standard library, k8s.io/api and
// apimachinery.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&DRCluster{}, &DRClusterList{},
		&DRPolicy{}, &DRPolicyList{},
		&DRPlacementControl{}, &DRPlacementControlList{},
		&VolumeReplicationGroup{}, &VolumeReplicationGroupList{},
		&DRDrill{}, &DRDrillList{},
		&DrillSandbox{}, &DrillSandboxList{},
		&DRRecipe{}, &DRRecipeList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
