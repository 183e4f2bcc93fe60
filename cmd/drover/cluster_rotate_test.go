package main

import (
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/cli"
)

// The rotation's flags are checked before any cluster is reached. (The rotation itself is
// tested against the lab's API and S3 servers in internal/join.)
func TestRotateStoreKeyRefusesWhatItCannotDo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--force is for --retire only", []string{"cluster", "rotate-store-key", "--profile", "s3-east", "--force"}, cli.ExitRefused, "--force applies to --retire only"},
		{"--profile is required", []string{"cluster", "rotate-store-key"}, cli.ExitUsage, `required flag(s) "profile" not set`},
		{"--cluster-kubeconfig names a cluster and a file", []string{"cluster", "rotate-store-key", "--profile", "s3-east", "--cluster-kubeconfig", "east.kubeconfig"},
			cli.ExitUsage, `"east.kubeconfig" is not NAME=FILE`},
		{"rotate-s3-credentials too", []string{"cluster", "rotate-s3-credentials", "--profile", "s3-east", "--cluster-kubeconfig", "=east.kubeconfig"},
			cli.ExitUsage, `"=east.kubeconfig" is not NAME=FILE`},
		{"join's --peer-kubeconfig too", []string{"cluster", "join", "west", "--cluster-kubeconfig", "west.kubeconfig", "--peer-kubeconfig", "east"},
			cli.ExitUsage, `"east" is not NAME=FILE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := droverIO(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("drover %s: exit %d, want %d with %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}
