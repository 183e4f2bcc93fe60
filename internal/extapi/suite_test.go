package extapi_test

import (
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// k8sClient talks to the one API server that TestMain starts for the package, with the external
// CRDs of internal/lab/crds/external installed.
var k8sClient client.Client

func TestMain(m *testing.M) {
	labtest.MainWithAPIServer(m, []string{"internal/lab/crds/external"},
		[]func(*runtime.Scheme) error{
			replicationv1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, ocmv1beta1.AddToScheme, snapshotv1.AddToScheme,
		},
		func(cl client.Client) { k8sClient = cl })
}
