package join_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// bareAPIServer starts an API server without drover's CRDs: a cluster where drover is not
// installed.
func bareAPIServer(t *testing.T) join.Cluster {
	t.Helper()
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin")}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("failed to start an API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return join.Cluster{Config: cfg, Source: "the bare API server's kubeconfig"}
}

// asUser is a lab cluster reached as a user without any role.
func asUser(t *testing.T, cluster, user string) join.Cluster {
	t.Helper()
	c, err := testLab.Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.Kubeconfig(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	return join.Cluster{Config: cfg, Source: "kubeconfig " + user + ".kubeconfig (user " + user + ")"}
}

func TestJoinRefusesBadInputAndCreatesNothing(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out)) // for the cases of a name or cluster already joined
	eastOnHub, eastOnEast := labelled(t, lab.Hub, lab.East), labelled(t, lab.East, lab.East)
	for _, tc := range refusals(t, bareAPIServer(t)) {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			managed := lab.West
			if tc.cluster == "east-again" {
				managed = lab.East
			}
			o := joinOptions(t, tc.cluster, managed, &out)
			tc.change(&o)
			err := join.Join(t.Context(), o)
			if err == nil {
				t.Fatalf("join succeeded:\n%s", out.String())
			}
			mustContain(t, err.Error(), tc.want...)
			for _, c := range []string{lab.Hub, lab.West, lab.East} {
				if got := labelled(t, c, tc.cluster); tc.cluster != lab.East && len(got) > 0 {
					t.Errorf("the refused join created on %s: %v", c, got)
				}
			}
			if got := labelled(t, lab.Hub, lab.East); !mapsEqual(got, eastOnHub) {
				t.Errorf("the refused join changed east's objects on the hub: %v, before %v", got, eastOnHub)
			}
			if got := labelled(t, lab.East, lab.East); !mapsEqual(got, eastOnEast) {
				t.Errorf("the refused join changed east's objects on east: %v, before %v", got, eastOnEast)
			}
			if strings.Contains(out.String(), "created") {
				t.Errorf("the refused join reported writes:\n%s", out.String())
			}
		})
	}
}

// A join that cannot obtain its token deletes what it created before failing.
func TestJoinThatFailsMidwayDeletesWhatItCreated(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.West, lab.West, &out)
	o.TokenTimeout = 1 // the token's request runs out of time at once
	err := join.Join(t.Context(), o)
	if err == nil {
		unjoinAll(t, lab.West, o.Managed)
		t.Fatal("join succeeded without waiting for the token")
	}
	mustContain(t, err.Error(), "failed to obtain a token for ServiceAccount drover-system/drover-hub on managed cluster west within 1ns",
		"deleted what this run created", "ServiceAccount drover-system/drover-hub on managed cluster west")
	mustContain(t, out.String(), "ServiceAccount drover-system/drover-hub created")
	for _, c := range []string{lab.Hub, lab.West} {
		if got := labelled(t, c, lab.West); len(got) > 0 {
			t.Errorf("the failed join left on %s: %v", c, got)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// refusal is a join that must be refused: of the name cluster, changed by change, with an
// error that holds want.
type refusal struct {
	name    string
	cluster string
	change  func(*join.Options)
	want    []string
}

func refusals(t *testing.T, bare join.Cluster) []refusal {
	return []refusal{{
		name: "an unreachable managed cluster", cluster: lab.West,
		change: func(o *join.Options) {
			o.Managed.Config = rest.CopyConfig(o.Managed.Config)
			o.Managed.Config.Host = "https://127.0.0.1:1"
		},
		want: []string{"cannot reach managed cluster west at https://127.0.0.1:1", "check the server address"},
	}, {
		name: "an unreachable hub", cluster: lab.West,
		change: func(o *join.Options) {
			o.Hub.Config = rest.CopyConfig(o.Hub.Config)
			o.Hub.Config.Host = "https://127.0.0.1:1"
		},
		want: []string{"cannot reach the hub at https://127.0.0.1:1", "check the server address"},
	}, {
		name: "credentials the managed cluster does not accept", cluster: lab.West,
		change: func(o *join.Options) {
			cfg := rest.AnonymousClientConfig(o.Managed.Config)
			cfg.BearerToken = "not-a-token"
			o.Managed = join.Cluster{Config: cfg, Source: "kubeconfig stale.kubeconfig (user old)"}
		},
		want: []string{"refused the credentials of kubeconfig stale.kubeconfig (user old) (401 Unauthorized)"},
	}, {
		name: "a managed cluster user without rights", cluster: lab.West,
		change: func(o *join.Options) { o.Managed = asUser(t, lab.West, "intern") },
		want:   []string{"(403 Forbidden)", "user intern", "cluster-admin"},
	}, {
		name: "a managed cluster without drover's agent", cluster: "bare",
		change: func(o *join.Options) { o.Managed = bare },
		want:   []string{"VolumeReplicationGroup CRD is not installed on managed cluster bare", "kubectl apply --server-side -f dist/drover-agent.yaml"},
	}, {
		name: "a hub without drover", cluster: lab.West,
		change: func(o *join.Options) { o.Hub = bare },
		want:   []string{"DRCluster CRD is not installed on the hub", "kubectl apply --server-side -f dist/drover-hub.yaml"},
	}, {
		name: "a name joined to another server", cluster: lab.East,
		change: func(o *join.Options) { o.Managed = labCluster(t, lab.West) },
		want:   []string{"cluster east is already joined with server https://127.0.0.1:", "drover cluster unjoin east"},
	}, {
		// Skipping TLS verification lets whoever is on the path read the administrator's
		// credentials and the hub's new token; main copied insecure-skip-tls-verify into the
		// hub's kubeconfig silently.
		name: "a managed kubeconfig that skips TLS verification", cluster: lab.West,
		change: func(o *join.Options) {
			o.Managed.Config = rest.CopyConfig(o.Managed.Config)
			o.Managed.Config.Insecure, o.Managed.Config.CAData, o.Managed.Config.CAFile = true, nil, ""
		},
		want: []string{"sets insecure-skip-tls-verify", "give --cluster-kubeconfig the cluster's CA", "--allow-insecure-kubeconfig"},
	}, {
		name: "a cluster joined under another name", cluster: "east-again",
		change: func(o *join.Options) {},
		want:   []string{"is already joined as east", "drover cluster unjoin east"},
	}}
}

// An API server loads a new ValidatingAdmissionPolicy some time after it is created, and one
// whose admission plugin is off never enforces it: the hub's credential would then write all
// that RBAC lets it. Join hands the hub the credential only once the managed cluster refuses it
// what drover-hub-on-managed-cluster forbids; on a cluster that never does, it fails, says why
// and deletes what it created.
func TestJoinRefusesAClusterThatDoesNotEnforceTheHubCredentialsPolicy(t *testing.T) {
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin"),
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ValidatingAdmissionPolicy")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("failed to start an API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	var out bytes.Buffer
	o := joinOptions(t, "unbounded", lab.West, &out)
	o.Managed = join.Cluster{Config: cfg, Source: "the unbounded API server's kubeconfig"}
	o.BoundsTimeout = 3 * time.Second
	err = join.Join(t.Context(), o)
	t.Logf("join of a cluster that does not enforce admission policies: %v", err)
	if err == nil {
		t.Fatalf("join gave the hub an unbounded credential:\n%s", out.String())
	}
	mustContain(t, err.Error(), "managed cluster unbounded does not enforce ValidatingAdmissionPolicy drover-hub-on-managed-cluster after 3s",
		"last answer to the probe: admitted", "join did not give it to the hub", "deleted what this run created")
	mustContain(t, out.String(), "Waiting for managed cluster unbounded to enforce ValidatingAdmissionPolicy drover-hub-on-managed-cluster")
	if got := labelled(t, lab.Hub, "unbounded"); len(got) > 0 {
		t.Errorf("the refused join left on the hub: %v", got)
	}
}
