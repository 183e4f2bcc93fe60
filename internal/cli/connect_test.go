package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://127.0.0.1:6443"}
- name: other
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: admin
  user: {token: t}
contexts:
- name: hub
  context: {cluster: hub, user: admin, namespace: apps}
- name: other
  context: {cluster: other, user: admin}
current-context: hub
`

func TestConnectionResolvesLikeKubectl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		conn       Connection
		host, ns   string
		wantErrHas string
	}{
		{name: "the current context and its namespace", conn: Connection{Kubeconfig: path}, host: "https://127.0.0.1:6443", ns: "apps"},
		{name: "--namespace overrides the context's", conn: Connection{Kubeconfig: path, Namespace: "db"}, host: "https://127.0.0.1:6443", ns: "db"},
		{name: "--context without a namespace means default", conn: Connection{Kubeconfig: path, Context: "other"}, host: "https://127.0.0.1:7443", ns: "default"},
		{name: "an unknown context", conn: Connection{Kubeconfig: path, Context: "nope"}, wantErrHas: `context "nope" does not exist`},
		{name: "a missing file", conn: Connection{Kubeconfig: filepath.Join(t.TempDir(), "none")}, wantErrHas: "failed to load the hub cluster's kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ns, err := tc.conn.Resolve()
			if tc.wantErrHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrHas) {
					t.Fatalf("Resolve() error %v, want one containing %q", err, tc.wantErrHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve() failed: %v", err)
			}
			if cfg.Host != tc.host || ns != tc.ns {
				t.Errorf("Resolve() = %s, %q; want %s, %q", cfg.Host, ns, tc.host, tc.ns)
			}
		})
	}
}

func TestConnectionWithoutAKubeconfigSaysWhatToPass(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, _, err := (&Connection{}).Resolve()
	if err == nil || err.Error() != "no kubeconfig found for the hub cluster: pass --kubeconfig FILE or set KUBECONFIG" {
		t.Errorf("Resolve() without a kubeconfig: %v", err)
	}
}
