package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

func TestACPUProfileSumsEachComponentOverTheStepTheLargestFirst(t *testing.T) {
	s := time.Second
	before := []lab.ProcessCPU{
		{PID: 10, Cluster: "east", Component: "kube-apiserver", CPU: 100 * s},
		{PID: 20, Cluster: "west", Component: "kube-apiserver", CPU: 50 * s},
		{PID: 30, Cluster: "west", Component: "drover", CPU: 7 * s},
		{PID: 40, Cluster: "east", Component: "etcd", CPU: 9 * s}, // stopped during the step
	}
	after := []lab.ProcessCPU{
		{PID: 10, Cluster: "east", Component: "kube-apiserver", CPU: 130 * s}, // 30
		{PID: 20, Cluster: "west", Component: "kube-apiserver", CPU: 60 * s},  // 10
		{PID: 30, Cluster: "west", Component: "drover", CPU: 12 * s},          // 5
		{PID: 31, Cluster: "east", Component: "drover", CPU: 5 * s},           // started during the step: 5
	}
	p := cpuProfileOf(before, after, 25*s, 2)
	if p.total != 50*s {
		t.Fatalf("total %s, want 50s (30 + 10 + 5 + 5; the stopped etcd counts nothing)", p.total)
	}
	if len(p.components) != 2 || p.components[0].component != "kube-apiserver" || p.components[0].cpu != 40*s ||
		p.components[1].component != "drover" || p.components[1].cpu != 10*s {
		t.Fatalf("components %+v, want kube-apiserver 40s then drover 10s", p.components)
	}
	if p.components[0].byCluster["east"] != 30*s || p.components[0].byCluster["west"] != 10*s {
		t.Errorf("kube-apiserver by cluster %v, want east 30s, west 10s", p.components[0].byCluster)
	}
	line := p.String()
	for _, want := range []string{"CPU 50s in 25s, 2.00 of 2 cores busy", "kube-apiserver 80% (east 60%, west 20%)", "drover 20% (east 10%, west 10%)"} {
		if !strings.Contains(line, want) {
			t.Errorf("the line %q lacks %q", line, want)
		}
	}
}

func TestEveryClusterReportsTheCPUOfItsAPIServerAndOfDrover(t *testing.T) {
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		c, err := testLab.Cluster(name)
		if err != nil {
			t.Fatal(err)
		}
		procs, err := c.CPUTimes()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen := map[string]time.Duration{}
		for _, p := range procs {
			if p.Cluster != name || p.PID == 0 {
				t.Errorf("%s: a process of another cluster or without a pid: %+v", name, p)
			}
			seen[p.Component] += p.CPU
		}
		for _, want := range []string{"kube-apiserver", "etcd", lab.ComponentDrover} {
			if seen[want] <= 0 {
				t.Errorf("%s: no CPU time for %s in %v", name, want, seen)
			}
		}
	}
}
