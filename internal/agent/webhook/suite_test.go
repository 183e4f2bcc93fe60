package webhook_test

import (
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package, started once in TestMain and shared by its tests.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	labtest.Main(m, func(l *labtest.Lab) { testLab = l })
}
