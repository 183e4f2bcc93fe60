package objectstore_test

import (
	"flag"
	"os"
	"testing"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package, started once in TestMain and shared by the tests
// against real S3 servers. With -short it is not started and those tests are skipped.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	labtest.Main(m, func(l *labtest.Lab) { testLab = l })
}

// needLab skips a test that needs the lab when -short left it out.
func needLab(t *testing.T) {
	t.Helper()
	if testLab == nil {
		t.Skip("needs the lab's S3 servers; -short does not start the lab")
	}
}
