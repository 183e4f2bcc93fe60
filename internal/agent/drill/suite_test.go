package drill_test

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package: drover installed from its release manifests (the
// agent's ClusterRole included), east and west joined, the lab's DRPolicies created.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	labtest.MainWith(m, labtest.Options{RunDrover: true, HubProbeInterval: time.Second, HubUnreachableAfter: 5 * time.Second},
		func(l *labtest.Lab) { testLab = l })
}
