package lab_test

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package, started once in TestMain and shared by its tests. It
// runs drover as `drover lab up` does (installed from its release manifests, east and west
// joined, its pods run by the lab kubelets), with a short probe and grace period so a lost
// cluster turns unreachable quickly, and with audit logs (audit_lab_test.go).
var testLab *labtest.Lab

const (
	hubProbeInterval    = time.Second
	hubUnreachableAfter = 3 * time.Second
)

func TestMain(m *testing.M) {
	// The tests' clients log nothing worth reading; without a logger controller-runtime prints a
	// warning with a stack trace.
	ctrl.SetLogger(logr.Discard())
	labtest.MainWith(m, labtest.Options{
		RunDrover: true, HubProbeInterval: hubProbeInterval, HubUnreachableAfter: hubUnreachableAfter, Audit: true,
	}, func(l *labtest.Lab) { testLab = l })
}
