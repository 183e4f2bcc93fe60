package volsynclab_test

import (
	"os"
	"testing"

	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
)

// TestMain starts the package's lab and an agent on east and west (vrglab.Run), apart from the
// lab of internal/agent/vrg's other lab tests, so both run at once.
func TestMain(m *testing.M) {
	os.Exit(vrglab.Run(m))
}
