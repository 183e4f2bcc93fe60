package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

// A step's CPU profile says where the machine's CPU went during it, by lab component (the API
// servers, etcd, drover's processes, the lab storage, ...) and cluster: on a small machine the
// API servers drover and the workloads talk to share the cores with drover itself, and a step
// whose cores are all busy is bounded by the CPU, not by any wait.

// cpuComponentsShown is how many components a CPU profile line names, the largest first.
const cpuComponentsShown = 6

// readCPU reads the CPU time of every running process of the lab; a cluster that is stopped
// (east during a failover) has none.
func (r *run) readCPU() []lab.ProcessCPU {
	var out []lab.ProcessCPU
	for _, c := range r.o.Lab.Clusters() {
		procs, err := c.CPUTimes()
		if err != nil {
			say(r.o, "CPU of %s's processes: %v", c.Name, err)
			continue
		}
		out = append(out, procs...)
	}
	return out
}

// componentCPU is the CPU one component used over a step, in all and by cluster.
type componentCPU struct {
	component string
	cpu       time.Duration
	byCluster map[string]time.Duration
}

// cpuProfile is the CPU the lab's processes used over a step of wall time.
type cpuProfile struct {
	wall  time.Duration
	cores int
	total time.Duration
	// components, the largest first.
	components []componentCPU
}

// cpuProfileOf computes a step's CPU from the readings before and after it. A process not read
// before (started during the step: east's control plane and agent on its return) counts from
// its start; one gone by the end (east stopped) is left out.
func cpuProfileOf(before, after []lab.ProcessCPU, wall time.Duration, cores int) cpuProfile {
	was := map[int]time.Duration{}
	for _, p := range before {
		was[p.PID] = p.CPU
	}
	byName := map[string]*componentCPU{}
	p := cpuProfile{wall: wall, cores: cores}
	for _, a := range after {
		used := a.CPU - was[a.PID]
		if used < 0 { // a pid reused by a new process
			used = a.CPU
		}
		c := byName[a.Component]
		if c == nil {
			c = &componentCPU{component: a.Component, byCluster: map[string]time.Duration{}}
			byName[a.Component] = c
		}
		c.cpu += used
		c.byCluster[a.Cluster] += used
		p.total += used
	}
	for _, c := range byName {
		p.components = append(p.components, *c)
	}
	slices.SortFunc(p.components, func(a, b componentCPU) int {
		return cmp.Or(cmp.Compare(b.cpu, a.cpu), cmp.Compare(a.component, b.component))
	})
	return p
}

// String is the profile as one line: the CPU used against what the cores could give, then the
// largest components' shares, each split by cluster when more than one ran it.
func (p cpuProfile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU %s in %s, %.2f of %d cores busy", p.total.Round(100*time.Millisecond), p.wall.Round(100*time.Millisecond),
		p.busy(), p.cores)
	components := make([]string, 0, len(p.components))
	for _, c := range p.components {
		item := c.component + " " + p.share(c.cpu)
		if len(c.byCluster) > 1 {
			var parts []string
			for _, cl := range slices.Sorted(maps.Keys(c.byCluster)) {
				parts = append(parts, cl+" "+p.share(c.byCluster[cl]))
			}
			item += " (" + strings.Join(parts, ", ") + ")"
		}
		components = append(components, item)
	}
	writeLargest(&b, ": ", components, cpuComponentsShown)
	return b.String()
}

// busy is how many cores the profile's CPU kept busy on average.
func (p cpuProfile) busy() float64 {
	return p.total.Seconds() / max(p.wall.Seconds(), 1e-9)
}

// share is d as a percentage of the profile's total CPU.
func (p cpuProfile) share(d time.Duration) string {
	if p.total <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*d.Seconds()/p.total.Seconds())
}
