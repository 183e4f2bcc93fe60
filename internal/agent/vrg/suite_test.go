package vrg_test

import (
	"os"
	"testing"

	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
)

// TestMain starts the package's lab and an agent on east and west (vrglab.Run). The VolSync lab
// tests have their own lab in internal/agent/vrg/volsynclab, so both run at once.
func TestMain(m *testing.M) {
	os.Exit(vrglab.Run(m))
}
