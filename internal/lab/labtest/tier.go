package labtest

import (
	"os"
	"testing"
)

// TierEnv is the environment variable that selects the long tier: make test-long sets it to
// TierLong and runs only the tests that call LongTier (hack/test-long.sh finds them).
const (
	TierEnv  = "DROVER_TESTS"
	TierLong = "long"
)

// LongTier marks t as one of the long tier's tests: a long story whose behaviour a shorter test
// in make test also proves, kept whole in make test-long so that it cannot rot. Outside the long
// tier it skips, naming the test that make test runs in its place (TestName of the same package, or
// dir.TestName with dir relative to the repository's root; a test in internal/lab/labtest checks
// that it exists and is not in the long tier itself) and what it alone adds.
func LongTier(t testing.TB, representative, adds string) {
	t.Helper()
	if os.Getenv(TierEnv) == TierLong {
		return
	}
	t.Skipf("long tier (make test-long, %s=%s): make test runs %s in its place; this one adds %s",
		TierEnv, TierLong, representative, adds)
}
