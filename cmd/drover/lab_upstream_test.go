//go:build linux

package main

import (
	"io"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/lab/crds/upstream"
)

func TestUpstreamCRDsFlagAloneFindsThemAsTheTestsDo(t *testing.T) {
	t.Setenv(crds.UpstreamEnv, "/from/the/variable")
	if got, err := upstreamCRDsDir(""); err != nil || got != "/from/the/variable" {
		t.Errorf("no flag: %q, %v; want $%s", got, err, crds.UpstreamEnv)
	}
	if got, err := upstreamCRDsDir("/given"); err != nil || got != "/given" {
		t.Errorf("--upstream-crds=/given: %q, %v", got, err)
	}
	want, wantErr := upstream.Dir()
	got, err := upstreamCRDsDir(upstreamCRDsFound)
	if got != want || (err == nil) != (wantErr == nil) {
		t.Errorf("--upstream-crds alone: %q, %v; want upstream.Dir's %q, %v", got, err, want, wantErr)
	}
	if err != nil && !strings.Contains(err.Error(), upstream.FetchCommand) {
		t.Errorf("--upstream-crds alone with none found: %v, want it to name %s", err, upstream.FetchCommand)
	}
}

// TestUpstreamCRDsFlagRefusesADirectoryAfterASpace: the flag alone finds the CRDs, so a
// directory after a space would be an argument; the error says how to give it.
func TestUpstreamCRDsFlagRefusesADirectoryAfterASpace(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"lab", "up", "--dir", t.TempDir(), "--upstream-crds", "/some/crds"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--upstream-crds=/some/crds") {
		t.Fatalf("lab up --upstream-crds /some/crds returned %v, want the form with an equals sign", err)
	}
}
