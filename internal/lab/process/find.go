package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is a running process found in /proc.
type Proc struct {
	PID int
	// Args is its command line, argv[0] first.
	Args []string
}

// Find returns the processes, other than this one, that match accepts. A lab
// process's command line names its directory (data dir, kubeconfig, certs, binary), so a scan
// for that path finds everything the lab started even after a crashed CLI or lost pid files.
func Find(match func(Proc) bool) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list processes: %w", err)
	}
	self := os.Getpid()
	var found []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if p, ok := Get(pid); ok && match(p) {
			found = append(found, p)
		}
	}
	return found, nil
}

// Get reads one process's command line; false when it is gone or has none (a zombie, a kernel
// thread).
func Get(pid int) (Proc, bool) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(raw) == 0 {
		return Proc{}, false
	}
	return Proc{PID: pid, Args: strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")}, true
}
