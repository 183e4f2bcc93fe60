package crd_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/drover-io/drover/config/crd"
)

func TestBasesHoldsEveryDroverCRD(t *testing.T) {
	names, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		t.Fatalf("failed to list the embedded CRDs: %v", err)
	}
	want := []string{
		"bases/drover.io_drclusters.yaml",
		"bases/drover.io_drdrills.yaml",
		"bases/drover.io_drillsandboxes.yaml",
		"bases/drover.io_drplacementcontrols.yaml",
		"bases/drover.io_drpolicies.yaml",
		"bases/drover.io_drrecipes.yaml",
		"bases/drover.io_volumereplicationgroups.yaml",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("embedded CRDs = %v, want %v; run hack/generate.sh", names, want)
	}
	for _, name := range names {
		data, err := fs.ReadFile(crd.Bases, name)
		if err != nil {
			t.Fatalf("failed to read %s: %v", name, err)
		}
		if !strings.Contains(string(data), "kind: CustomResourceDefinition") {
			t.Errorf("%s is not a CustomResourceDefinition", name)
		}
	}
}
