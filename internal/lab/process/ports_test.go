package process

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestReservedPortsAreBelowTheEphemeralRangeAndNeverHandedOutTwice(t *testing.T) {
	labDir := t.TempDir()
	seen := map[int]bool{}
	for range 50 {
		port, err := ReservePort(labDir)
		if err != nil {
			t.Fatal(err)
		}
		if port < PortRangeFirst || port >= 32768 {
			t.Errorf("port %d is outside [%d, 32768)", port, PortRangeFirst)
		}
		if seen[port] {
			t.Errorf("port %d reserved twice", port)
		}
		seen[port] = true
	}
	ReleasePorts(labDir)
	for port := range seen {
		if _, err := os.Stat(filepath.Join(PortReservations(), fmt.Sprint(port))); !os.IsNotExist(err) {
			t.Errorf("reservation of port %d not released: %v", port, err)
		}
	}
}
