package lab

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/lab/process"
)

func TestALabThatRunsDroverIsReopenedSoAndOneOfAnEarlierDroverIsRefused(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: filepath.Join(dir, "drover"), RunDrover: true}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { process.ReleasePorts(l.Dir()) })
	if err := l.writeState(); err != nil {
		t.Fatal(err)
	}
	opts.RunDrover = false
	again, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.opts.RunDrover {
		t.Error("a lab created to run drover, opened without saying so, must run drover")
	}

	// A lab of an earlier drover ran drover's processes with lab credentials.
	raw, err := os.ReadFile(filepath.Join(l.Dir(), stateFile))
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(raw), `"install": "manifests"`, `"install": "processes"`, 1)
	if old == string(raw) {
		t.Fatalf("the state does not record the install: %s", raw)
	}
	if err := os.WriteFile(filepath.Join(l.Dir(), stateFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "drover lab down") {
		t.Errorf("a lab of an earlier drover: got %v, want an error that says to take it down", err)
	}
}

func TestEachClusterGetsItsOwnPodRangeAndAnAgentIPInIt(t *testing.T) {
	a := &Cluster{Name: East, Ports: Ports{APIServer: 25629}}
	b := &Cluster{Name: West, Ports: Ports{APIServer: 25630}}
	if a.PodCIDR() == b.PodCIDR() {
		t.Errorf("two clusters share the pod range %s", a.PodCIDR())
	}
	for _, c := range []*Cluster{a, b} {
		if !c.PodCIDR().Addr().IsLoopback() || !c.PodCIDR().Contains(c.AgentPodIP()) {
			t.Errorf("%s: pod range %s on loopback holding the agent's IP %s", c.Name, c.PodCIDR(), c.AgentPodIP())
		}
	}
}

func TestMonitoringNeedsDroverInTheLabAndSaysHowToBuildPrometheus(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: filepath.Join(dir, "drover")}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { process.ReleasePorts(l.Dir()) })
	if _, err := l.StartMonitoring(context.Background()); err == nil || !strings.Contains(err.Error(), "needs drover") {
		t.Errorf("a lab without drover: got %v, want an error that says monitoring needs drover", err)
	}
	l.opts.RunDrover = true
	if _, err := l.StartMonitoring(context.Background()); err == nil || !strings.Contains(err.Error(), "make tools-monitoring") {
		t.Errorf("no bin/prometheus: got %v, want an error that says to run make tools-monitoring", err)
	}
	if _, ok := l.MonitoringURL(); ok {
		t.Error("no Prometheus runs, yet MonitoringURL reports one")
	}
}

func TestTheHubsAndTheAgentsDeploymentsGetTheArgsTheLabIsAskedFor(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: filepath.Join(dir, "drover"), RunDrover: true,
		HubProbeInterval: time.Second, HubArgs: []string{"--drpc-workers=32"}, AgentArgs: []string{"--vrg-workers=16"}}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { process.ReleasePorts(l.Dir()) })
	deployment := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "manager", "args": []any{"run"}},
			}}}}}}
	}
	argsOf := func(u *unstructured.Unstructured) []string {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		var out []string
		for _, a := range containers[0].(map[string]any)["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}
	c := l.clusters[0]
	for _, tc := range []struct {
		name string
		want []string
	}{
		{HubDeployment, []string{"run", "--probe-interval=1s", "--drpc-workers=32"}},
		{AgentDeployment, []string{"run", "--vrg-workers=16"}},
		{"another", []string{"run"}},
	} {
		u := deployment(tc.name)
		if err := c.tuneDeployment(u); err != nil {
			t.Fatal(err)
		}
		if got := argsOf(u); !slices.Equal(got, tc.want) {
			t.Errorf("Deployment %s: args %q, want %q", tc.name, got, tc.want)
		}
	}
	opts.AgentArgs = []string{"vrg-workers=16"}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "--name=value") {
		t.Errorf("an argument that is not a flag: got %v, want an error that says to give --name=value", err)
	}
}
