//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/cli"
)

// droverIO runs the command line in process as main does and returns its exit status, what
// it printed on stdout and what on stderr (the error included).
func droverIO(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(strings.NewReader(""))
	code := run(t.Context(), root, args, &stderr)
	return code, stdout.String(), stderr.String()
}

// readerToken gives the ServiceAccount app/reader read access to the DRPlacementControls of the
// namespace app alone (and to the DRPolicies and DRClusters), and returns a token of it from the API server's TokenRequest.
func readerToken(t *testing.T, h *safetyHub) string {
	t.Helper()
	ctx := t.Context()
	must(t, h.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "app"}}))
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: "app"}}
	read := []string{"get", "list", "watch"}
	must(t, h.c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "drover-app-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"drover.io"}, Resources: []string{"drplacementcontrols"}, Verbs: read}}}))
	must(t, h.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "app"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "drover-app-reader"}, Subjects: subjects}))
	must(t, h.c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "drover-cluster-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"drover.io"}, Resources: []string{"drpolicies", "drclusters"}, Verbs: read}}}))
	must(t, h.c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "drover-cluster-reader"}, Subjects: subjects}))
	cs, err := kubernetes.NewForConfig(h.cfg)
	must(t, err)
	tr, err := cs.CoreV1().ServiceAccounts("app").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// silentListener accepts connections and never answers on them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range held {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestConnectionFlagsAsKubectl reaches a real API server standing for the hub through
// kubectl's connection flags alone: --server, --token and --certificate-authority without a
// kubeconfig; --as, impersonation refused for a user without RBAC; --request-timeout against a
// server that never answers.
func TestConnectionFlagsAsKubectl(t *testing.T) {
	h := startSafetyHub(t)
	token := readerToken(t, h)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, h.cfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	// No kubeconfig anywhere: the flags alone say where and who.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	server := []string{"--server", h.cfg.Host, "--certificate-authority", ca}
	admin := []string{"--kubeconfig", h.kubeconfig}
	silent := silentListener(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--server and --token of a ServiceAccount read the namespace it may read", append([]string{"status", "-n", "app", "--token", token}, server...),
			cli.ExitOK, "Deployed"},
		{"the same token is refused where it has no role", append([]string{"status", "-n", "db", "--token", token}, server...),
			cli.ExitFailed, `User "system:serviceaccount:app:reader" cannot list resource "drplacementcontrols"`},
		{"a token the API server did not issue is refused", append([]string{"status", "-n", "app", "--token", "not-a-token"}, server...),
			cli.ExitFailed, "the server has asked for the client to provide credentials"},
		{"--as a user without any role is refused", append([]string{"status", "-n", "app", "--as", "nobody"}, admin...),
			cli.ExitFailed, `User "nobody" cannot list resource "drplacementcontrols"`},
		{"--as the ServiceAccount reads what it may", append([]string{"status", "db", "-n", "app", "--as", "system:serviceaccount:app:reader"}, admin...),
			cli.ExitOK, "Policy:  east-west"},
		{"--as the ServiceAccount may not patch", append([]string{"failover", "db", "-n", "app", "--to", "west", "--as", "system:serviceaccount:app:reader"}, admin...),
			cli.ExitRefused, `cannot patch resource "drplacementcontrols"`},
		{"--request-timeout gives up on a server that never answers", []string{"status", "-n", "app", "--server", "https://" + silent, "--insecure-skip-tls-verify", "--request-timeout", "1s"},
			cli.ExitUnreachable, "/api?timeout=1s\": "},
		{"cluster list takes the same flags", []string{"cluster", "list", "--server", "https://" + silent, "--insecure-skip-tls-verify", "--request-timeout", "1s"},
			cli.ExitUnreachable, "/api?timeout=1s\": "},
		{"version says an unreachable hub, and succeeds", []string{"version", "--server", "https://" + silent, "--insecure-skip-tls-verify", "--request-timeout", "1s"},
			cli.ExitOK, "hub cluster: not reachable at https://" + silent},
		{"version names the hub cluster's Kubernetes", append([]string{"version"}, admin...), cli.ExitOK, "hub cluster: Kubernetes v"},
		{"unjoin takes the hub's --kubeconfig", []string{"cluster", "unjoin", "north", "--dry-run", "--kubeconfig", h.kubeconfig, "--drover-namespace", "drover-system"},
			cli.ExitOK, "DRCluster north would be deleted (dry run)"},
		{"unjoin's old --hub-kubeconfig and -n still work, deprecated", []string{"cluster", "unjoin", "north", "--dry-run", "--hub-kubeconfig", h.kubeconfig, "-n", "drover-system"},
			cli.ExitOK, "Flag --hub-kubeconfig has been deprecated, use --kubeconfig, as on every verb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := droverIO(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("drover %s: exit %d, want %d with %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestEveryClientVerbTakesKubectlsConnectionFlags checks the flags on every verb that talks to
// the hub, and that -n means the applications' namespace wherever it is offered.
func TestEveryClientVerbTakesKubectlsConnectionFlags(t *testing.T) {
	root := newRootCommand()
	verbs := [][]string{{"status"}, {"plan"}, {"failover"}, {"relocate"}, {"protect"}, {"unprotect"}, {"version"},
		{"cluster", "list"}, {"cluster", "lost"}, {"cluster", "join"}, {"cluster", "unjoin"}, {"cluster", "rotate-store-key"},
		{"drill"}, {"drill", "history"}, {"drill", "report"}}
	for _, v := range verbs {
		cmd, _, err := root.Find(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"kubeconfig", "context", "server", "token", "as", "as-group", "request-timeout", "certificate-authority", "insecure-skip-tls-verify", "user"} {
			if strings.HasPrefix(v[0], "cluster") && (v[1] == "join" || v[1] == "unjoin") && name == "server" {
				continue // join's --server is a deprecated name of --cluster-server
			}
			if cmd.Flags().Lookup(name) == nil {
				t.Errorf("drover %s has no --%s", strings.Join(v, " "), name)
			}
		}
	}
	usages := map[string][]string{}
	eachCommand(root, func(c *cobra.Command) {
		if f := c.Flags().ShorthandLookup("n"); f != nil && f.Deprecated == "" {
			usages[f.Usage] = append(usages[f.Usage], c.CommandPath())
		}
	})
	if len(usages) != 1 {
		t.Errorf("-n means %d things: %v", len(usages), usages)
	}
	// The help lists the verb's own flags first, the connection flags apart.
	code, help, _ := droverIO(t, "status", "--help")
	own, connection, found := strings.Cut(help, "\nConnection flags, as kubectl's")
	if code != cli.ExitOK || !found || strings.Contains(own, "--token") || !strings.Contains(own, "--watch") || !strings.Contains(connection, "--token") {
		t.Errorf("status --help does not list the connection flags apart:\n%s", help)
	}
	// A verb that runs and has subcommands lists both, and its connection flags apart.
	code, help, _ = droverIO(t, "drill", "--help")
	own, connection, found = strings.Cut(help, "\nConnection flags, as kubectl's")
	if code != cli.ExitOK || !found || strings.Contains(own, "--token") || !strings.Contains(own, "--check-job") ||
		!strings.Contains(own, "Available Commands:\n  history ") || !strings.Contains(connection, "--token") {
		t.Errorf("drill --help does not list its subcommands, and the connection flags apart:\n%s", help)
	}
}

// TestEveryOutputFormatParsesBack prints each -o form of each verb that reports and reads it
// back: JSON and YAML as Kubernetes objects or Lists, name as kind.group/name, jsonpath.
func TestEveryOutputFormatParsesBack(t *testing.T) {
	h := startSafetyHub(t)
	kc := []string{"--kubeconfig", h.kubeconfig}
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{"status -o json is a List of DRPlacementControls", []string{"status", "-o", "json"}, listOf("DRPlacementControl", "db")},
		{"status -A -o yaml is a List", []string{"status", "-A", "-o", "yaml"}, listOf("DRPlacementControl", "db")},
		{"status APP -o yaml is the object", []string{"status", "db", "-o", "yaml"}, objectOf("DRPlacementControl", "drover.io/v1alpha1", "db")},
		{"status -o name", []string{"status", "-o", "name"}, equals("drplacementcontrol.drover.io/db\n")},
		{"status -o wide adds the policy and the action asked", []string{"status", "-o", "wide"}, containsAll("POLICY", "ASKED", "east-west", "no action")},
		{"status -o jsonpath", []string{"status", "-o", "jsonpath={.items[*].status.currentPrimary}"}, equals("east")},
		{"status -o jsonpath without braces", []string{"status", "db", "-o", "jsonpath=.spec.drPolicyRef.name"}, equals("east-west")},
		{"plan -o json is a Plan", []string{"plan", "failover", "db", "--to", "west", "-o", "json"}, objectOf("Plan", cli.CLIGroupVersion, "db")},
		{"plan -o jsonpath", []string{"plan", "failover", "db", "--to", "west", "-o", "jsonpath={.verdict}/{.from}/{.to}"}, equals("can start/east/west")},
		{"plan -o name", []string{"plan", "failover", "db", "--to", "west", "-o", "name"}, equals("drplacementcontrol.drover.io/db\n")},
		{"plan --all -o yaml is a List of Plans", []string{"plan", "failover", "--all", "--from", "east", "--to", "west", "-o", "yaml"}, listOf("Plan", "db")},
		{"failover --dry-run -o json is the plan", []string{"failover", "db", "--to", "west", "--dry-run", "-o", "json"}, objectOf("Plan", cli.CLIGroupVersion, "db")},
		{"relocate --wait -o json is the DRPlacementControl", []string{"relocate", "db", "--to", "east", "--wait", "-o", "json"},
			objectOf("DRPlacementControl", "drover.io/v1alpha1", "db")},
		{"relocate --all --wait -o json is the summary, a List of ActionResults", []string{"relocate", "--all", "--to", "east", "--wait", "--yes", "-o", "json"},
			listOf("ActionResult", "db")},
		{"relocate --all --wait -o jsonpath", []string{"relocate", "--all", "--to", "east", "--wait", "--yes", "-o", "jsonpath={.items[0].result}"},
			equals("nothing to do")},
		{"relocate --all --wait -o name", []string{"relocate", "--all", "--to", "east", "--wait", "--yes", "-o", "name"},
			equals("drplacementcontrol.drover.io/db\n")},
		{"cluster list -o json is a List of DRClusters", []string{"cluster", "list", "-o", "json"}, listOf("DRCluster", "east", "north", "west")},
		{"cluster list -o name", []string{"cluster", "list", "-o", "name"},
			equals("drcluster.drover.io/east\ndrcluster.drover.io/north\ndrcluster.drover.io/west\n")},
		{"cluster list -o jsonpath", []string{"cluster", "list", "-o", "jsonpath={.items[*].metadata.name}"}, equals("east north west")},
		{"cluster list -o wide", []string{"cluster", "list", "-o", "wide"}, containsAll("S3 PROFILE", "s3-north")},
		{"version -o json", []string{"version", "-o", "json"}, objectOf("Version", cli.CLIGroupVersion, "")},
		{"version -o jsonpath", []string{"version", "--client", "-o", "jsonpath={.client.version}"}, equals("dev")},
		{"protect --dry-run -o jsonpath", []string{"protect", "web", "--policy", "east-west", "--cluster", "east", "--dry-run", "-o", "jsonpath={.spec.preferredCluster}"},
			equals("east")},
		{"drill -o json is the DRDrill", []string{"drill", "db", "--to", "west", "-o", "json"}, objectOf("DRDrill", "drover.io/v1alpha1", "")},
		{"drill history -o yaml is a List of DRDrills", []string{"drill", "history", "db", "-o", "yaml"}, listOfKind("DRDrill", 1)},
		{"drill history -o jsonpath", []string{"drill", "history", "db", "-o", "jsonpath={.items[0].spec.targetCluster}"}, equals("west")},
		{"drill report --format markdown", []string{"drill", "report", "db", "--format", "markdown"},
			containsAll("# DR drill of app/db: Pending (in progress, not final)", "| Asked | target west;")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := droverIO(t, append(tc.args, kc...)...)
			if code != cli.ExitOK {
				t.Fatalf("drover %s: exit %d:\n%s%s", strings.Join(tc.args, " "), code, stdout, stderr)
			}
			tc.check(t, stdout)
		})
	}
	code, _, stderr := droverIO(t, append([]string{"status", "-o", "table"}, kc...)...)
	if code != cli.ExitUsage || !strings.Contains(stderr, `unknown output format "table": use wide, name, json, yaml or jsonpath=TEMPLATE`) {
		t.Errorf("status -o table: exit %d: %s", code, stderr)
	}
	code, _, stderr = droverIO(t, append([]string{"plan", "failover", "db", "--to", "west", "-o", "jsonpath={.items["}, kc...)...)
	if code != cli.ExitUsage || !strings.Contains(stderr, "does not parse") {
		t.Errorf("plan -o jsonpath with a broken template: exit %d: %s", code, stderr)
	}
}

// decode reads JSON or YAML into a map.
func decode(t *testing.T, out string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("the output does not parse: %v\n%s", err, out)
	}
	return m
}

// listOf checks a Kubernetes List of objects of kind with these names.
func listOf(kind string, names ...string) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		m := decode(t, out)
		if m["kind"] != "List" || m["apiVersion"] != "v1" {
			t.Fatalf("not a List: kind %v, apiVersion %v\n%s", m["kind"], m["apiVersion"], out)
		}
		items, _ := m["items"].([]any)
		var got []string
		for _, it := range items {
			obj, _ := it.(map[string]any)
			meta, _ := obj["metadata"].(map[string]any)
			if obj["kind"] != kind {
				t.Errorf("item of kind %v, want %s", obj["kind"], kind)
			}
			name, _ := meta["name"].(string)
			got = append(got, name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("items %v, want %v", got, names)
		}
	}
}

// listOfKind checks a Kubernetes List of n objects of kind, whatever their names.
func listOfKind(kind string, n int) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		m := decode(t, out)
		items, _ := m["items"].([]any)
		if m["kind"] != "List" || m["apiVersion"] != "v1" || len(items) != n {
			t.Fatalf("not a List of %d items:\n%s", n, out)
		}
		for _, it := range items {
			if obj, _ := it.(map[string]any); obj["kind"] != kind {
				t.Errorf("item of kind %v, want %s", obj["kind"], kind)
			}
		}
	}
}

// objectOf checks one object of kind and apiVersion named name (any name when empty).
func objectOf(kind, apiVersion, name string) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		m := decode(t, out)
		meta, _ := m["metadata"].(map[string]any)
		if m["kind"] != kind || m["apiVersion"] != apiVersion || name != "" && meta["name"] != name {
			t.Errorf("got kind %v, apiVersion %v, metadata %v; want %s, %s, %s\n%s", m["kind"], m["apiVersion"], meta, kind, apiVersion, name, out)
		}
		if !json.Valid([]byte(out)) && strings.HasPrefix(strings.TrimSpace(out), "{") {
			t.Errorf("not valid JSON:\n%s", out)
		}
	}
}

func equals(want string) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		if out != want {
			t.Errorf("printed %q, want %q", out, want)
		}
	}
}

func containsAll(want ...string) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}
}
