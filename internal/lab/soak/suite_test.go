package soak

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab runs drover installed from its release manifests, as `drover lab soak` does, with
// the hub's probe shortened as in the e2e suite.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	labtest.MainWith(m, labtest.Options{RunDrover: true, HubProbeInterval: time.Second, HubUnreachableAfter: 5 * time.Second},
		func(l *labtest.Lab) { testLab = l })
}
