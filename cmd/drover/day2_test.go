package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDay2VerbsCheckTheirArgumentsBeforeConnecting: validate, gather and events refuse a wrong
// command line before reading a kubeconfig, and reach the kubeconfig (which does not exist)
// when the command line is right.
func TestDay2VerbsCheckTheirArgumentsBeforeConnecting(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	cases := []verbError{
		{[]string{"validate", "clusters", "-o", "wide"}, `unknown output format "wide": use json or yaml`},
		{[]string{"validate", "application"}, "accepts 1 arg(s), received 0"},
		{[]string{"validate", "app", "db", "-o", "table"}, `unknown output format "table"`},
		{[]string{"validate", "clusters", "--cluster-kubeconfig", "east"}, `"east" is not NAME=FILE`},
		{[]string{"gather", "--cluster-kubeconfig", "=x"}, `"=x" is not NAME=FILE`},
		{[]string{"events"}, "accepts 1 arg(s), received 0"},
		{[]string{"validate", "clusters"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"validate", "application", "db", "-n", "app"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"gather", "db", "--file", "x.tar.gz"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"events", "db"}, "failed to load the hub cluster's kubeconfig"},
	}
	expectVerbErrors(t, missing, cases)
}

// verbError is a command line and what its error must say.
type verbError struct {
	args []string
	want string
}

// expectVerbErrors runs each command line with --kubeconfig kubeconfig and checks that it fails
// saying what the case wants.
func expectVerbErrors(t *testing.T, kubeconfig string, cases []verbError) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append(tc.args, "--kubeconfig", kubeconfig))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("drover %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}
