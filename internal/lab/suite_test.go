package lab_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package, started once in TestMain.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	l, err := labtest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the lab:", err)
		os.Exit(1)
	}
	testLab = l
	code := m.Run()
	l.Teardown(code)
	os.Exit(code)
}
