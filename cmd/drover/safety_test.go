//go:build linux

package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/join"
)

// safetyHub is a real API server standing for the hub (no hub runs), with app/db deployed on
// east and the DRCluster north that drover cluster join made (no policy pairs it).
type safetyHub struct {
	c          client.Client
	kubeconfig string
	cfg        *rest.Config
}

func startSafetyHub(t *testing.T) *safetyHub {
	t.Helper()
	cfg, _, c := startHubAPIServer(t)
	createDeployedApp(t, c)
	labels := map[string]string{join.LabelManagedBy: join.ManagedByValue, join.LabelCluster: "north"}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: join.DefaultNamespace}},
		&v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: "north", Labels: labels}, Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Name: "north-kubeconfig", Namespace: join.DefaultNamespace}, S3ProfileName: "s3-north", Region: "north"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "north-kubeconfig", Namespace: join.DefaultNamespace, Labels: labels},
			StringData: map[string]string{"kubeconfig": "x"}},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return &safetyHub{c: c, kubeconfig: writeKubeconfig(t, cfg), cfg: cfg}
}

// drover runs the command line in process as main does, with stdin, and returns its exit
// status and what it printed on stdout and stderr. terminal says whether stdin stands for a
// person at a terminal.
func (h *safetyHub) drover(t *testing.T, stdin string, terminal bool, args ...string) (int, string) {
	t.Helper()
	saved := stdinIsTerminal
	stdinIsTerminal = func(*cobra.Command) bool { return terminal }
	defer func() { stdinIsTerminal = saved }()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	code := run(t.Context(), root, append(args, "--kubeconfig", h.kubeconfig), &out)
	return code, out.String()
}

// versions are the resourceVersions of every object the verbs could change.
func (h *safetyHub) versions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{"DRPlacementControl": &v1alpha1.DRPlacementControlList{}, "DRCluster": &v1alpha1.DRClusterList{},
		"DRPolicy": &v1alpha1.DRPolicyList{}, "Secret": &corev1.SecretList{}}
	for kind, list := range lists {
		if err := h.c.List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			o, err := apimeta.Accessor(item)
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}

// TestDryRunChangesNothingAndExitCodesSayWhy runs failover, relocate, cluster unjoin and
// cluster lost as a person or a script does, and checks the exit status of each class of
// outcome, and that no preview, refusal or declined confirmation changes any object.
func TestDryRunChangesNothingAndExitCodesSayWhy(t *testing.T) {
	h := startSafetyHub(t)
	before := h.versions(t)
	cases := []struct {
		name     string
		stdin    string
		terminal bool
		args     []string
		code     int
		want     []string
	}{
		{"failover dry run", "", false, []string{"failover", "db", "--to", "west", "--dry-run"}, cli.ExitOK,
			[]string{"Verdict: failover can start"}},
		{"failover --all dry run", "", false, []string{"failover", "--all", "--from", "east", "--to", "west", "--dry-run"}, cli.ExitOK,
			[]string{"Verdict: failover --all can start for 1 applications."}},
		{"relocate dry run", "", false, []string{"relocate", "db", "--to", "west", "--dry-run"}, cli.ExitOK,
			[]string{"Verdict: relocate can start"}},
		{"relocate --all dry run", "", false, []string{"relocate", "--all", "--to", "west", "--dry-run"}, cli.ExitOK,
			[]string{"Verdict: relocate --all can start for 1 applications."}},
		{"unjoin dry run", "", false, []string{"cluster", "unjoin", "north", "--dry-run"}, cli.ExitOK,
			[]string{"DRCluster north would be deleted (dry run)", "Secret drover-system/north-kubeconfig would be deleted (dry run)", "Dry run: nothing was changed."}},
		{"failover --all without a terminal", "", false, []string{"failover", "--all", "--from", "east", "--to", "west"}, cli.ExitUsage,
			[]string{"stdin is not a terminal to ask on, so add --yes (-y) to confirm"}},
		{"relocate --all without a terminal", "", false, []string{"relocate", "--all", "--to", "west"}, cli.ExitUsage,
			[]string{"add --yes (-y) to confirm"}},
		{"unjoin without a terminal", "", false, []string{"cluster", "unjoin", "north"}, cli.ExitUsage,
			[]string{"add --yes (-y) to confirm"}},
		{"failover --all answered y", "y\n", true, []string{"failover", "--all", "--from", "east", "--to", "west"}, cli.ExitRefused,
			[]string{"Type east to confirm", `not confirmed (typed "y", not "east"): nothing was changed`}},
		{"unjoin answered with another name", "south\n", true, []string{"cluster", "unjoin", "north"}, cli.ExitRefused,
			[]string{"Type north to confirm", `not confirmed (typed "south", not "north")`}},
		{"cluster lost preview", "", false, []string{"cluster", "lost", "east", "--reason", "flooded"}, cli.ExitOK,
			[]string{"Nothing changed: run again with --yes to confirm."}},
		{"failover refused by the plan", "", false, []string{"failover", "db", "--to", "north"}, cli.ExitRefused,
			[]string{"failover refused"}},
		{"unjoin refused while a policy pairs the cluster", "", false, []string{"cluster", "unjoin", "east", "--yes"}, cli.ExitRefused,
			[]string{"DRPolicy east-west pairs cluster east"}},
		{"unknown flag", "", false, []string{"failover", "db", "--to", "west", "--bogus"}, cli.ExitUsage,
			[]string{"unknown flag: --bogus"}},
		{"missing argument", "", false, []string{"relocate", "--to", "west"}, cli.ExitUsage,
			[]string{"accepts 1 arg(s), received 0"}},
		{"unknown command", "", false, []string{"evacuate"}, cli.ExitUsage,
			[]string{`unknown command "evacuate"`}},
	}
	for _, tc := range cases {
		code, out := h.drover(t, tc.stdin, tc.terminal, tc.args...)
		if code != tc.code {
			t.Errorf("%s: drover %s exited %d, want %d:\n%s", tc.name, strings.Join(tc.args, " "), code, tc.code, out)
		}
		mustContainAll(t, tc.name, out, tc.want...)
	}
	after := h.versions(t)
	for key, rv := range before {
		if after[key] != rv {
			t.Errorf("%s changed: resourceVersion %s, was %s", key, after[key], rv)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the objects changed: %d before, %d after", len(before), len(after))
	}

	// Confirmed by typing the cluster's name: asked, then (no hub runs) timed out.
	code, out := h.drover(t, "east\n", true, "failover", "--all", "--from", "east", "--to", "west", "--wait", "--timeout", "2s")
	if code != cli.ExitPartial {
		t.Errorf("failover --all confirmed, no hub: exited %d, want %d (partly done):\n%s", code, cli.ExitPartial, out)
	}
	mustContainAll(t, "failover --all confirmed", out, "Asked the hub to failover 1 applications to west.", "did not complete")
	d := &v1alpha1.DRPlacementControl{}
	if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: "app", Name: "db"}, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Action != v1alpha1.ActionFailover || d.Spec.FailoverCluster != "west" {
		t.Errorf("the confirmed failover --all left the spec %+v", d.Spec)
	}
	if code, out := h.drover(t, "", false, "failover", "db", "--to", "west", "--wait", "--timeout", "1s"); code != cli.ExitTimedOut {
		t.Errorf("failover --wait, no hub: exited %d, want %d (timed out):\n%s", code, cli.ExitTimedOut, out)
	}
	if code, out := h.drover(t, "north\n", true, "cluster", "unjoin", "north"); code != cli.ExitOK || !strings.Contains(out, "DRCluster north deleted") {
		t.Errorf("unjoin confirmed: exited %d, want 0:\n%s", code, out)
	}

	// A hub that does not answer.
	down := rest.CopyConfig(h.cfg)
	down.Host = "https://127.0.0.1:1"
	unreachable := &safetyHub{c: h.c, kubeconfig: writeKubeconfig(t, down)}
	if code, out := unreachable.drover(t, "", false, "failover", "db", "--to", "west", "--dry-run"); code != cli.ExitUnreachable {
		t.Errorf("a hub that does not answer: exited %d, want %d (unreachable):\n%s", code, cli.ExitUnreachable, out)
	}
}
