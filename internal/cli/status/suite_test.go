package status

import (
	"testing"

	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// TestMain starts the package's API server, with drover's CRDs installed, for clitest.Hub: it
// stands for the hub cluster. No hub runs: the tests write the status the hub would write.
func TestMain(m *testing.M) {
	labtest.MainWithAPIServer(m, clitest.CRDs, clitest.Schemes, clitest.Use)
}
