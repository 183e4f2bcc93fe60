package cluster

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// k8sClient talks to the one API server that TestMain starts for the package, with drover's
// CRDs installed: it stands for the hub cluster. No hub runs: the tests write the status the
// hub would write, to put each DRCluster in the situation a test needs.
var k8sClient client.Client

func TestMain(m *testing.M) {
	labtest.MainWithAPIServer(m, clitest.CRDs, clitest.Schemes,
		func(cl client.Client) { k8sClient = cl; clitest.Use(cl) })
}
