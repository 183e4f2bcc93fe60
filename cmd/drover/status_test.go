package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelpSaysKubectlDroverWhenRunAsAPlugin(t *testing.T) {
	cases := []struct {
		argv0, want string
	}{
		{"/usr/local/bin/kubectl-drover", "kubectl drover relocate APP --to CLUSTER"},
		{`C:\bin\kubectl-drover.exe`, "kubectl drover relocate APP --to CLUSTER"},
		{"/usr/local/bin/drover", "drover relocate APP --to CLUSTER"},
	}
	for _, tc := range cases {
		t.Run(tc.argv0, func(t *testing.T) {
			root := newRootCommand()
			adaptToPluginName(root, filepath.ToSlash(strings.ReplaceAll(tc.argv0, `\`, "/")))
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetArgs([]string{"relocate", "--help"})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Usage:\n  "+tc.want) {
				t.Errorf("help of %s lacks %q:\n%s", tc.argv0, tc.want, out.String())
			}
			plugin := strings.HasPrefix(tc.want, "kubectl")
			if got := strings.Contains(out.String(), "  kubectl drover relocate db"); got != plugin {
				t.Errorf("examples name kubectl drover: %v, want %v:\n%s", got, plugin, out.String())
			}
		})
	}
}

func TestVerbsCheckTheirArgumentsBeforeConnecting(t *testing.T) {
	// A kubeconfig that does not exist: every case must fail before it is read.
	missing := filepath.Join(t.TempDir(), "none")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "evacuate", "db", "--to", "west"}, `unknown action "evacuate": use drover plan failover or drover plan relocate`},
		{[]string{"failover", "db"}, `required flag(s) "to" not set`},
		{[]string{"status", "db", "-A"}, "APP names one DRPlacementControl: drop -A and name its namespace with -n"},
		{[]string{"status", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"relocate", "db", "--to", "west"}, "failed to load the hub cluster's kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append(tc.args, "--kubeconfig", missing))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("drover %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}
