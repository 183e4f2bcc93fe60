package crds_test

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/drover-io/drover/internal/lab/crds"
)

func TestExternalHoldsEveryExternalCRD(t *testing.T) {
	names, err := fs.Glob(crds.External, "external/*.yaml")
	if err != nil {
		t.Fatalf("failed to list the embedded CRDs: %v", err)
	}
	want := []string{
		"external/cluster.open-cluster-management.io_placementdecisions.yaml",
		"external/cluster.open-cluster-management.io_placements.yaml",
		"external/multicluster.x-k8s.io_serviceexports.yaml",
		"external/replication.storage.openshift.io_volumegroupreplicationclasses.yaml",
		"external/replication.storage.openshift.io_volumegroupreplicationcontents.yaml",
		"external/replication.storage.openshift.io_volumegroupreplications.yaml",
		"external/replication.storage.openshift.io_volumereplicationclasses.yaml",
		"external/replication.storage.openshift.io_volumereplications.yaml",
		"external/snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
		"external/snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
		"external/snapshot.storage.k8s.io_volumesnapshots.yaml",
		"external/volsync.backube_replicationdestinations.yaml",
		"external/volsync.backube_replicationsources.yaml",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("embedded CRDs = %v, want %v; run hack/generate.sh", names, want)
	}
}
