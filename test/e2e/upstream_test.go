package e2e

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/lab/crds/upstream"
)

// TestTheLabServesTheUpstreamCRDs proves the suite runs on the upstream schemas: every upstream
// CRD is served, OCM's on the hub and the others on east and west, with upstream's schema of
// every version exactly. Without the upstream CRDs it skips, naming the command that downloads
// them, unless DROVER_REQUIRE_UPSTREAM_APIS=1 (CI) makes that a failure.
func TestTheLabServesTheUpstreamCRDs(t *testing.T) {
	upstream.Require(t, upstreamErr)
	upstreamCRDs, err := crds.LoadUpstream(upstreamDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []string{lab.Hub, lab.East, lab.West} {
		cl, err := testLab.Client(cluster, apiextensionsv1.AddToScheme)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range upstreamCRDs {
			if strings.HasSuffix(u.CRD.Spec.Group, "open-cluster-management.io") != (cluster == lab.Hub) {
				continue
			}
			served := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(context.Background(), client.ObjectKey{Name: u.CRD.Name}, served); err != nil {
				t.Errorf("%s: failed to get CRD %s (upstream %s): %v", cluster, u.CRD.Name, u.Name, err)
				continue
			}
			if len(served.Spec.Versions) != len(u.CRD.Spec.Versions) {
				t.Errorf("%s: CRD %s has %d versions, upstream %s has %d", cluster, u.CRD.Name, len(served.Spec.Versions), u.Name, len(u.CRD.Spec.Versions))
				continue
			}
			for i, v := range u.CRD.Spec.Versions {
				if !equality.Semantic.DeepEqual(served.Spec.Versions[i].Schema, v.Schema) {
					t.Errorf("%s: CRD %s version %s is not upstream's schema (%s): the lab serves its own", cluster, u.CRD.Name, v.Name, u.Name)
				}
			}
		}
	}
}
