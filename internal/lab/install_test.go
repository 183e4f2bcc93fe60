package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheLabKeepsTheInstallModeItWasCreatedWith(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: filepath.Join(dir, "drover"), Install: InstallManifests}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releasePorts(l.Dir()) })
	if !l.opts.RunDrover {
		t.Error("the manifests mode runs drover")
	}
	if err := l.writeState(); err != nil {
		t.Fatal(err)
	}
	opts.Install = ""
	again, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.InstallMode() != InstallManifests {
		t.Errorf("a lab opened without a mode runs %s, want the recorded %s", again.InstallMode(), InstallManifests)
	}
	opts.Install = InstallProcesses
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "drover lab down") {
		t.Errorf("another mode for an existing lab: got %v, want an error that says to take it down", err)
	}
	opts.Install = "helm"
	if _, err := New(opts); err == nil {
		t.Error("an unknown mode must be refused")
	}
	_ = os.RemoveAll(l.Dir())
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
