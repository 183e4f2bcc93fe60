//go:build linux

package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/lab/labtest"
)

var updateCLIDoc = flag.Bool("update-cli-doc", false, "write docs/cli.md's command reference from the commands (make cli-docs)")

// TestCLIDocIsCurrent fails when docs/cli.md's command reference differs from what the
// commands say; make cli-docs rewrites it.
func TestCLIDocIsCurrent(t *testing.T) {
	// Defaults read from the environment would make the reference depend on the shell.
	for _, env := range []string{lab.DirEnv, crds.UpstreamEnv, envClusterName, envPodNamespace} {
		t.Setenv(env, "")
	}
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docs", "cli.md")
	current, err := os.ReadFile(path) //nolint:gosec // the repository's own file
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderCLIDoc(string(current), newRootCommand())
	if err != nil {
		t.Fatal(err)
	}
	if *updateCLIDoc {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil { //nolint:gosec // a document
			t.Fatal(err)
		}
		return
	}
	if want == string(current) {
		return
	}
	got, wantLines := strings.Split(string(current), "\n"), strings.Split(want, "\n")
	for i := range min(len(got), len(wantLines)) {
		if got[i] != wantLines[i] {
			t.Fatalf("docs/cli.md is stale: run make cli-docs and commit it. Line %d is\n  %s\nwhere the commands say\n  %s", i+1, got[i], wantLines[i])
		}
	}
	t.Fatalf("docs/cli.md is stale: run make cli-docs and commit it (it has %d lines, the commands say %d)", len(got), len(wantLines))
}

// TestNoFlagHelpHasABrokenPlaceholder: pflag takes a word in backquotes in a flag's help for
// the name of its value (--audit drover lab audit), so none may hold one by accident.
func TestNoFlagHelpHasABrokenPlaceholder(t *testing.T) {
	eachCommand(newRootCommand(), func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("drover %s --%s: its help has a backquote, shown as the value's name: %q", c.CommandPath(), f.Name, f.Usage)
			}
		})
	})
}

// TestNoFlagHelpShowsAnEmptyDefault: a flag's help says its default only when there is one.
func TestNoFlagHelpShowsAnEmptyDefault(t *testing.T) {
	eachCommand(newRootCommand(), func(c *cobra.Command) {
		if usage := c.LocalFlags().FlagUsages(); strings.Contains(usage, "(default [])") {
			t.Errorf("drover %s: its help shows an empty default:\n%s", c.CommandPath(), usage)
		}
	})
}
