package labinstall

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	charttest "github.com/drover-io/drover/hack/helm"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab runs drover installed from its charts through Helm (charttest.Installer), east and
// west joined, with a short probe and grace period so a lost cluster turns unreachable quickly.
var (
	testLab   *labtest.Lab
	installer *charttest.Installer
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	root, err := charttest.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	installer = &charttest.Installer{Root: root}
	labtest.MainWith(m, labtest.Options{
		RunDrover: true, Installer: installer, HubProbeInterval: time.Second, HubUnreachableAfter: 3 * time.Second,
	}, func(l *labtest.Lab) { testLab = l })
}
