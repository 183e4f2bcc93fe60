package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-io/drover/internal/lab/process"
)

// The multi-cluster network is recorded in lab.json: a lab reopened without saying so keeps
// it, its flag file exists while it is on, and SetMultiClusterNetwork turns it off.
func TestTheMultiClusterNetworkIsRecordedAndItsFlagFollowsIt(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: filepath.Join(dir, "drover"), MultiClusterNetwork: true}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { process.ReleasePorts(l.Dir()) })
	if err := l.writeState(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.MultiClusterFlag()); err != nil {
		t.Fatalf("the network is on but its flag is missing: %v", err)
	}
	opts.MultiClusterNetwork = false
	again, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.MultiClusterNetwork() {
		t.Fatal("a lab recorded with the multi-cluster network, reopened without saying so, must keep it")
	}
	if err := again.SetMultiClusterNetwork(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again.MultiClusterFlag()); !os.IsNotExist(err) {
		t.Fatalf("the network is off but its flag remains: %v", err)
	}
	last, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if last.MultiClusterNetwork() {
		t.Fatal("the network turned off must stay off")
	}
}
