package installtest

import (
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab runs drover as a user installs it: the release manifests applied, east and west
// joined, drover's pods run by each cluster's lab kubelet.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	labtest.MainWith(m, labtest.Options{Install: lab.InstallManifests}, func(l *labtest.Lab) { testLab = l })
}
