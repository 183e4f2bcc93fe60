package main

import (
	"os"
	"testing"
)

// runAsDroverEnv makes the test binary run as drover itself (main), so a test can start a
// drover command as a process of its own: exec os.Args[0] with this variable set to "1".
const runAsDroverEnv = "DROVER_TEST_RUN_AS_DROVER"

func TestMain(m *testing.M) {
	if os.Getenv(runAsDroverEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}
