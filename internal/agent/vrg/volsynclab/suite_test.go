package volsynclab_test

import (
	"os"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/agent"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
)

// TestMain starts the package's lab and an agent on east and west (vrglab.RunWith), apart from
// the lab of internal/agent/vrg's other lab tests, so both run at once. The agents compare the
// VolSync keys with the stores every keyRecheck instead of every minute: a key deleted from
// the stores or replaced by the secondary travels within it.
func TestMain(m *testing.M) {
	os.Exit(vrglab.RunWith(m, func(o *agent.Options) { o.VolSyncKeyRecheck = keyRecheck }))
}

// keyRecheck is the agents' VolSyncKeyRecheck in this package: no shorter than the window in
// which TestVolSyncProtectsFailsOverAndRelocatesAStatefulSet counts a settled secondary's reads
// of its key Secrets, each recheck being one read per key.
const keyRecheck = 10 * time.Second
