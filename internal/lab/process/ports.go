package process

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Lab ports come from below Linux's ephemeral range (32768-60999), so the kernel never hands
// one of them to an outgoing connection, and each is reserved machine-wide by a file named after
// it that holds its owner's directory, so labs that start at the same moment (test packages run
// in parallel) never pick the same port. A reservation whose owner's directory is gone is stale
// and reused.
const (
	PortRangeFirst = 20000
	portRangeSize  = 12000
)

// PortReservations is the directory of port reservation files.
func PortReservations() string { return filepath.Join(os.TempDir(), "drover-lab-ports") }

// ReservePort picks an unused loopback port for the owner directory and reserves it.
func ReservePort(owner string) (int, error) {
	if err := os.MkdirAll(PortReservations(), 0o750); err != nil {
		return 0, fmt.Errorf("failed to create the port reservation directory: %w", err)
	}
	for range 1000 {
		port := PortRangeFirst + rand.IntN(portRangeSize) //nolint:gosec // spreading ports, not a secret
		path := filepath.Join(PortReservations(), strconv.Itoa(port))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			removeIfStale(path)
			continue
		}
		_, werr := f.WriteString(owner)
		_ = f.Close()
		if werr != nil {
			_ = os.Remove(path)
			return 0, fmt.Errorf("failed to reserve port %d: %w", port, werr)
		}
		if PortFree(port) != nil {
			_ = os.Remove(path)
			continue
		}
		return port, nil
	}
	return 0, errors.New("found no free loopback port to reserve in 1000 tries")
}

// removeIfStale removes a reservation whose owner's directory is gone and that is older than
// any lab's start-up (a new lab reserves its ports before it creates its directory); the next
// round may take the port.
func removeIfStale(path string) {
	owner, rerr := os.ReadFile(path)
	info, ierr := os.Stat(path)
	if rerr == nil && ierr == nil && len(owner) > 0 && time.Since(info.ModTime()) > time.Minute {
		if _, serr := os.Stat(string(owner)); errors.Is(serr, os.ErrNotExist) {
			_ = os.Remove(path)
		}
	}
}

// ReleasePorts removes the reservations of the owner directory.
func ReleasePorts(owner string) {
	entries, _ := os.ReadDir(PortReservations())
	for _, e := range entries {
		path := filepath.Join(PortReservations(), e.Name())
		if raw, err := os.ReadFile(path); err == nil && string(raw) == owner {
			_ = os.Remove(path)
		}
	}
}

// PortFree fails when something listens on the loopback port.
func PortFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	return l.Close()
}
