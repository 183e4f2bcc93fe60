//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/labtest"
)

func TestHelpSaysKubectlDroverWhenRunAsAPlugin(t *testing.T) {
	cases := []struct {
		argv0, want string
	}{
		{"/usr/local/bin/kubectl-drover", "kubectl drover relocate (APP | --all) --to CLUSTER"},
		{`C:\bin\kubectl-drover.exe`, "kubectl drover relocate (APP | --all) --to CLUSTER"},
		{"/usr/local/bin/drover", "drover relocate (APP | --all) --to CLUSTER"},
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
	cases := []verbError{
		{[]string{"plan", "evacuate", "db", "--to", "west"}, `unknown action "evacuate": use drover plan failover or drover plan relocate`},
		{[]string{"failover", "db"}, `required flag(s) "to" not set`},
		{[]string{"failover", "db", "--retry"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"relocate", "db", "--retry", "--continue"}, "if any flags in the group [retry continue] are set none of the others can be"},
		{[]string{"relocate", "db", "--continue", "--to", "west"}, "--retry and --continue take none of --to, --wait, --dry-run or -o"},
		{[]string{"failover", "--all", "--from", "east", "--retry"}, "--retry and --continue answer one application's failed hook"},
		{[]string{"status", "db", "-A"}, "APP names one DRPlacementControl: drop -A and name its namespace with -n"},
		{[]string{"status", "-o", "table"}, `unknown output format "table"`},
		{[]string{"relocate", "db", "--to", "west"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"failover", "--all", "--to", "west"}, "name the cluster to fail over from with --from"},
		{[]string{"failover", "db", "--from", "east", "--to", "west"}, "--from selects applications for --all: add --all, or name one APP without it"},
		{[]string{"relocate", "--all", "db", "--to", "east"}, "--all acts on every matching application: name no APP"},
		{[]string{"plan", "failover", "--all", "--from", "west", "--to", "west"}, "--from and --to both name west: name two clusters"},
		{[]string{"relocate", "--all", "--to", "east", "-l", "a in b"}, `--selector "a in b" is not a label selector`},
		{[]string{"relocate", "--all", "--to", "east"}, "failed to load the hub cluster's kubeconfig"},
		{[]string{"drill", "db", "--keep", "25h"}, "--keep 25h0m0s is out of range"},
		{[]string{"drill", "db", "--check-job", missing}, "failed to read the check Job: open " + missing},
		{[]string{"drill", "db", "-o", "table"}, `unknown output format "table"`},
		{[]string{"drill", "history", "db", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"drill", "report", "db", "--format", "html"}, `unknown report format "html": use markdown or text`},
		{[]string{"drill", "report", "db", "db-x", "extra"}, "accepts between 1 and 2 arg(s), received 3"},
		{[]string{"drill", "db", "--to", "west"}, "failed to load the hub cluster's kubeconfig"},
	}
	expectVerbErrors(t, missing, cases)
}

// TestVerbsThroughAKubeconfig runs the commands as a person does, against a real API server
// standing for the hub, through a kubeconfig whose context names the namespace. No hub runs:
// the test writes the status the hub would.
func TestVerbsThroughAKubeconfig(t *testing.T) {
	cfg, _, c := startHubAPIServer(t)
	kubeconfig := writeKubeconfig(t, cfg)
	drpc := createDeployedApp(t, c)

	run := func(args ...string) (string, error) { return droverOn(t, kubeconfig, args...) }

	out, err := run("status")
	if err != nil || !regexp.MustCompile(`(?m)^db\s+Deployed\s+east\s+True\s+True\s+\d+s ago\s+\d+s/10s\s+Completed\s+-$`).MatchString(out) {
		t.Errorf("status in the context's namespace: %v\n%s", err, out)
	}
	if out, err := run("status", "--context", "bare"); err != nil || out != "No DRPlacementControls in namespace default.\n" {
		t.Errorf("status in a context without a namespace: %v\n%q", err, out)
	}
	if out, err := run("status", "-n", "default", "-A"); err != nil || !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, "app") {
		t.Errorf("status -A: %v\n%s", err, out)
	}
	if _, err := run("status", "dbb"); err == nil || err.Error() != `no DRPlacementControl "dbb" in namespace "app"; it has: db` {
		t.Errorf("status of a missing app: %v", err)
	}
	if out, err := run("plan", "relocate", "db", "--to", "west"); err != nil || !strings.Contains(out, "Verdict: relocate can start") {
		t.Errorf("plan relocate: %v\n%s", err, out)
	}
	if _, err := run("failover", "db", "--to", "west"); err != nil {
		t.Fatalf("failover: %v", err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(drpc), drpc); err != nil {
		t.Fatal(err)
	}
	if drpc.Spec.Action != v1alpha1.ActionFailover || drpc.Spec.FailoverCluster != "west" {
		t.Errorf("failover left the spec %+v", drpc.Spec)
	}
}

// writeKubeconfig writes a kubeconfig for cfg with two contexts: hub (namespace app, current)
// and bare (no namespace).
// startHubAPIServer starts a real API server standing for the hub, with drover's CRDs and no hub
// running, until the test ends; it returns the server's configuration, the scheme of drover's
// and Kubernetes' types, and a client with that scheme.
func startHubAPIServer(t *testing.T) (*rest.Config, *runtime.Scheme, client.Client) {
	t.Helper()
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin"),
		CRDDirectoryPaths: []string{filepath.Join(root, "config/crd/bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("failed to start the API server (run `make tools` for bin/etcd and bin/kube-apiserver): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, scheme, c
}

// droverOn runs the command line in process against the hub of kubeconfig and returns what it
// printed, stdout and stderr together.
func droverOn(t *testing.T, kubeconfig string, args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// must fails the test at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin", Namespace: "app"}
	kc.Contexts["bare"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// createDeployedApp creates the DRClusters east and west (Reachable), a DRPolicy pairing them
// every 10s and the DRPlacementControl app/db, with the status of a deployed, protected
// application on east, synced 8s ago.
func createDeployedApp(t *testing.T, c client.Client) *v1alpha1.DRPlacementControl {
	t.Helper()
	ctx := t.Context()
	now := metav1.Now()
	synced := metav1.NewTime(now.Add(-8 * time.Second))
	condition := func(condType string) metav1.Condition {
		return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: "ok", LastTransitionTime: now}
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}))
	var profiles []v1alpha1.S3Profile
	for _, name := range []string{"east", "west"} {
		cl := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Name: name, Namespace: "drover-system"}, S3ProfileName: "s3-" + name, Region: name}}
		must(t, c.Create(ctx, cl))
		cl.Status.Conditions = []metav1.Condition{condition(v1alpha1.ConditionReachable)}
		must(t, c.Status().Update(ctx, cl))
		profiles = append(profiles, v1alpha1.S3Profile{Name: "s3-" + name, Endpoint: "http://127.0.0.1:9000", Bucket: "drover",
			SecretRef: v1alpha1.SecretRef{Name: "s3-" + name, Namespace: "drover-system"}})
	}
	must(t, c.Create(ctx, &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "east-west"}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"}, SchedulingInterval: "10s", S3Profiles: profiles,
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "lab-block", Backend: v1alpha1.BackendVolRep}}}}))
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Spec: v1alpha1.DRPlacementControlSpec{
		DRPolicyRef: v1alpha1.PolicyReference{Name: "east-west"}, PreferredCluster: "east",
		PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, ProtectedNamespaces: []string{"db"}}}
	must(t, c.Create(ctx, d))
	d.Status = v1alpha1.DRPlacementControlStatus{
		Phase: v1alpha1.PhaseDeployed, Progression: "Completed", CurrentPrimary: "east", LastGroupSyncTime: &synced,
		Conditions: []metav1.Condition{condition(v1alpha1.ConditionAvailable), condition(v1alpha1.ConditionPeerReady), condition(v1alpha1.ConditionProtected)},
		VRGs: []v1alpha1.VRGSummary{
			{Cluster: "east", ReplicationState: v1alpha1.ReplicationStatePrimary, State: v1alpha1.StatePrimary,
				DataReady: metav1.ConditionTrue, DataProtected: metav1.ConditionTrue},
			{Cluster: "west", ReplicationState: v1alpha1.ReplicationStateSecondary, State: v1alpha1.StateSecondary},
		},
	}
	must(t, c.Status().Update(ctx, d))
	return d
}
