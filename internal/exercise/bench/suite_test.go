package bench

import (
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab runs drover as `drover lab bench` does (labtest.Released).
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	labtest.MainWith(m, labtest.Released(), func(l *labtest.Lab) { testLab = l })
}
