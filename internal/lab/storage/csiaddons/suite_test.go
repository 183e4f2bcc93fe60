package csiaddons_test

import (
	"testing"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of this package, started once in TestMain and shared by its tests.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	labtest.Main(m, func(l *labtest.Lab) { testLab = l })
}
