package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// k8sClient talks to the one API server that TestMain starts for the package, with drover's CRDs
// installed from config/crd/bases.
var k8sClient client.Client

func TestMain(m *testing.M) {
	labtest.MainWithAPIServer(m, []string{"config/crd/bases"},
		[]func(*runtime.Scheme) error{v1alpha1.AddToScheme},
		func(cl client.Client) { k8sClient = cl })
}
