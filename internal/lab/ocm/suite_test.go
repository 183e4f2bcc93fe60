package ocm_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// hub talks to the one API server that TestMain starts for the package, serving the lab's OCM
// CRDs (internal/lab/crds/external).
var hub client.Client

func TestMain(m *testing.M) {
	labtest.MainWithAPIServer(m, []string{"internal/lab/crds/external"},
		[]func(*runtime.Scheme) error{ocmv1beta1.AddToScheme, clientgoscheme.AddToScheme}, func(cl client.Client) { hub = cl })
}
