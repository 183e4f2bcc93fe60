package lab

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab/procfs"
)

// component is one process of a lab cluster.
type component struct {
	// name identifies the component in status output and log file names.
	name string
	// binary is the absolute path of the executable.
	binary string
	args   []string
	// env is added to the lab's own environment; it carries what must not show on a command line.
	env []string
}

// process is a running lab process found in /proc.
type process struct {
	pid  int
	args []string
}

// Every component's command line names its cluster directory (data dir, kubeconfig or certs), so
// the lab finds its processes by scanning /proc for that path. This survives a crashed `drover`
// CLI and lost pid files: `lab down` after a crash still finds everything it started.
func findProcesses(pathFragment string) ([]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list processes: %w", err)
	}
	self := os.Getpid()
	var found []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		if !bytes.Contains(raw, []byte(pathFragment)) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if !namesOwnPath(args, pathFragment) || isLabCLI(args) {
			continue
		}
		p := process{pid: pid, args: args}
		// Only the lab's own binaries: a shell or an editor with a lab file open is left alone.
		if !slices.Contains(componentNames, componentOf(p)) {
			continue
		}
		found = append(found, p)
	}
	return found, nil
}

// peerArgPrefix starts the flags that name another cluster's directory, such as the storage
// controller's --peer-data-dir.
const peerArgPrefix = "--peer-"

// namesOwnPath reports whether an argument other than a peer flag contains pathFragment. A process
// belongs to the cluster whose directory it works in, not to the peer it mirrors to: without this,
// stopping east would also find, and kill, west's storage controller.
func namesOwnPath(args []string, pathFragment string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, peerArgPrefix) && strings.Contains(a, pathFragment) {
			return true
		}
	}
	return false
}

// isLabCLI reports whether args are a `drover lab <verb>` CLI invocation (which may mention the
// lab directory in a flag) rather than a component the lab started.
func isLabCLI(args []string) bool {
	return len(args) > 2 && args[1] == "lab" && args[2] != storageControllerVerb && args[2] != kubeletVerb && args[2] != proxyVerb
}

// componentByBinary names the components whose binary is not named after them.
var componentByBinary = map[string]string{"versitygw": componentS3}

// componentOf tells which component a process is: the base name of its binary (mapped by
// componentByBinary where they differ), or for drover itself its verb (the lab storage
// controller, the lab kubelet).
func componentOf(p process) string {
	if len(p.args) > 2 && p.args[1] == "lab" && p.args[2] == storageControllerVerb {
		return componentStorage
	}
	if len(p.args) > 2 && p.args[1] == "lab" && p.args[2] == kubeletVerb {
		return componentKubelet
	}
	if len(p.args) > 2 && p.args[1] == "lab" && p.args[2] == proxyVerb {
		return componentProxy
	}
	base := filepath.Base(p.args[0])
	if name, ok := componentByBinary[base]; ok {
		return name
	}
	return base
}

// start launches c detached from the caller (its own session), so it outlives a `drover lab up`
// that exits. Output goes to logDir/<name>.log. When tieToParent is set (tests), the process is
// killed if the starting process dies.
func (c component) start(logDir string, tieToParent bool) (int, error) {
	if _, err := os.Stat(c.binary); err != nil {
		return 0, fmt.Errorf("binary %s for %s is missing: run `make tools` (or hack/build-tools.sh) to build it", c.binary, c.name)
	}
	logPath := filepath.Join(logDir, c.name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("failed to open log %s: %w", logPath, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n==== %s starting %s %s\n", time.Now().Format(time.RFC3339), c.binary, strings.Join(c.args, " "))
	cmd := exec.Command(c.binary, c.args...) //nolint:gosec // the lab runs binaries it built itself
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if len(c.env) > 0 {
		cmd.Env = append(os.Environ(), c.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if tieToParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("failed to start %s: %w", c.name, err)
	}
	pid := cmd.Process.Pid
	// Reap the child when it exits so it never lingers as a zombie in a long-running parent.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}

// stopProcesses sends SIGTERM to every process, waits up to grace for them to exit and kills
// what is left.
func stopProcesses(procs []process, grace time.Duration) {
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !anyAlive(procs) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	for i := 0; i < 100 && anyAlive(procs); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

func anyAlive(procs []process) bool {
	for _, p := range procs {
		if procfs.Alive(p.pid) {
			return true
		}
	}
	return false
}

// Lab ports come from below Linux's ephemeral range (32768-60999), so the kernel never hands
// one of them to an outgoing connection, and each is reserved machine-wide by a file named after
// it, so labs that start at the same moment (test packages run in parallel) never pick the
// same port. A reservation whose lab directory is gone is stale and reused.
const (
	portRangeFirst = 20000
	portRangeSize  = 12000
)

// portReservations is the directory of port reservation files.
func portReservations() string { return filepath.Join(os.TempDir(), "drover-lab-ports") }

// reservePort picks an unused loopback port for the lab in labDir and reserves it.
func reservePort(labDir string) (int, error) {
	if err := os.MkdirAll(portReservations(), 0o750); err != nil {
		return 0, fmt.Errorf("failed to create the port reservation directory: %w", err)
	}
	for range 1000 {
		port := portRangeFirst + rand.IntN(portRangeSize) //nolint:gosec // spreading ports, not a secret
		path := filepath.Join(portReservations(), strconv.Itoa(port))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			// A reservation is stale when its lab directory is gone and it is older than any
			// lab's start-up (a new lab reserves its ports before it creates its directory).
			owner, rerr := os.ReadFile(path)
			info, ierr := os.Stat(path)
			if rerr == nil && ierr == nil && len(owner) > 0 && time.Since(info.ModTime()) > time.Minute {
				if _, serr := os.Stat(string(owner)); errors.Is(serr, os.ErrNotExist) {
					_ = os.Remove(path) // the next round may take it
				}
			}
			continue
		}
		_, werr := f.WriteString(labDir)
		_ = f.Close()
		if werr != nil {
			_ = os.Remove(path)
			return 0, fmt.Errorf("failed to reserve port %d: %w", port, werr)
		}
		if checkPortFree(port, "") != nil {
			_ = os.Remove(path)
			continue
		}
		return port, nil
	}
	return 0, errors.New("found no free loopback port to reserve in 1000 tries")
}

// releasePorts removes the reservations of the lab in labDir.
func releasePorts(labDir string) {
	entries, _ := os.ReadDir(portReservations())
	for _, e := range entries {
		path := filepath.Join(portReservations(), e.Name())
		if owner, err := os.ReadFile(path); err == nil && string(owner) == labDir {
			_ = os.Remove(path)
		}
	}
}

// checkPortFree fails with an error that names the port and its user when port is taken.
func checkPortFree(port int, user string) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("port %d (for %s) is in use by another process: stop that process, or run `drover lab down` and `drover lab up` to pick new ports", port, user)
	}
	return l.Close()
}

// logExcerpt returns the error lines of a component's log (klog's E and F lines, or lines that
// say "error"), at most n of the last ones, or the last n lines when none look like errors.
func logExcerpt(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var errs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "E") || strings.HasPrefix(l, "F") || strings.Contains(strings.ToLower(l), "error") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		lines = errs
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
