package argocd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab/procfs"
)

// Components of an instance, in start order. Each runs as <Dir>/bin/<name>, a symbolic link to
// its binary: Argo CD's multi-call binary takes its role from that name, and the lab finds the
// instance's processes by it.
const (
	ComponentRedis            = "redis-server"
	ComponentRepoServer       = "argocd-repo-server"
	ComponentAppController    = "argocd-application-controller"
	ComponentAppSetController = "argocd-applicationset-controller"
)

// componentOrder is the start order; Stop goes the other way, so the controllers never spend
// their shutdown retrying a repo-server or redis that is already gone.
var componentOrder = []string{ComponentRedis, ComponentRepoServer, ComponentAppController, ComponentAppSetController}

// Ports are the loopback ports of an instance. Zero fields are picked when the instance starts.
type Ports struct {
	Redis             int `json:"redis"`
	RepoServer        int `json:"repoServer"`
	RepoServerMetrics int `json:"repoServerMetrics"`
	ControllerMetrics int `json:"controllerMetrics"`
	AppSetMetrics     int `json:"appSetMetrics"`
	AppSetProbe       int `json:"appSetProbe"`
	AppSetWebhook     int `json:"appSetWebhook"`
}

func (p *Ports) all() []*int {
	return []*int{&p.Redis, &p.RepoServer, &p.RepoServerMetrics, &p.ControllerMetrics, &p.AppSetMetrics, &p.AppSetProbe, &p.AppSetWebhook}
}

// component is one process of the instance.
type component struct {
	name   string
	binary string
	args   []string
	env    []string
	// ready answers nil once the component serves.
	ready func(ctx context.Context) error
}

// process is a running component found in /proc.
type process struct {
	pid  int
	name string
}

// findProcesses returns the running processes whose executable path (argv[0]) is in binDir,
// by component name. The path survives a crashed CLI and lost pid files.
func findProcesses(binDir string) (map[string]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list processes: %w", err)
	}
	prefix := []byte(binDir + string(filepath.Separator))
	found := map[string]process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(raw, prefix) || !procfs.Alive(pid) {
			continue
		}
		argv0, _, _ := bytes.Cut(raw, []byte{0})
		name := filepath.Base(string(argv0))
		found[name] = process{pid: pid, name: name}
	}
	return found, nil
}

// start launches c detached from the caller (its own session), so it outlives a CLI that exits.
// Output goes to logDir/<name>.log. With tieToParent (tests), it is killed when its starter dies.
func (c component) start(logDir string, tieToParent bool) (int, error) {
	logPath := filepath.Join(logDir, c.name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("failed to open log %s: %w", logPath, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n==== %s starting %s %s\n", time.Now().Format(time.RFC3339), c.binary, strings.Join(c.args, " "))
	cmd := exec.Command(c.binary, c.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), c.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if tieToParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("failed to start %s: %w", c.name, err)
	}
	// Reap the child when it exits so it never lingers as a zombie in a long-running parent.
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// readyTimeout bounds the wait for one component to serve. The application controller builds
// no cluster cache before it serves, so every component is up within seconds on an idle machine;
// the margin is for a machine busy compiling.
const readyTimeout = 90 * time.Second

// waitReady polls c.ready until it answers nil, the process dies (the error quotes its log), or
// readyTimeout passes.
func (c component) waitReady(ctx context.Context, pid int, logDir string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	logPath := filepath.Join(logDir, c.name+".log")
	for {
		if !procfs.Alive(pid) {
			return fmt.Errorf("%s exited while starting; the end of %s:\n%s", c.name, logPath, logTail(logPath, 15))
		}
		err := c.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready in %s (%w); see %s", c.name, readyTimeout, err, logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopProcesses sends SIGTERM to each process in turn, waits up to grace for it to exit and
// kills it if it has not.
func stopProcesses(procs []process, grace time.Duration) {
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for procfs.Alive(p.pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if procfs.Alive(p.pid) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			for i := 0; i < 100 && procfs.Alive(p.pid); i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// logTail returns the last n lines of a log.
func logTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tcpListening answers nil once something accepts connections on the loopback port.
func tcpListening(port int) func(context.Context) error {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// Ports come from the lab's range and reservation directory (internal/lab/process.go): below
// Linux's ephemeral range, each reserved machine-wide by a file named after it that holds the
// owner's directory, so parallel test labs and this instance never pick the same port. The lab
// treats a reservation whose directory is gone (and older than a minute) as stale.
const (
	portRangeFirst = 20000
	portRangeSize  = 12000
)

func portReservations() string { return filepath.Join(os.TempDir(), "drover-lab-ports") }

// reservePort picks an unused loopback port and reserves it for owner.
func reservePort(owner string) (int, error) {
	if err := os.MkdirAll(portReservations(), 0o750); err != nil {
		return 0, fmt.Errorf("failed to create the port reservation directory: %w", err)
	}
	for range 1000 {
		port := portRangeFirst + rand.IntN(portRangeSize) //nolint:gosec // spreading ports, not a secret
		path := filepath.Join(portReservations(), strconv.Itoa(port))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			continue
		}
		_, werr := f.WriteString(owner)
		_ = f.Close()
		if werr != nil {
			_ = os.Remove(path)
			return 0, fmt.Errorf("failed to reserve port %d: %w", port, werr)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			_ = os.Remove(path)
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("found no free loopback port to reserve in 1000 tries")
}

// releasePorts removes owner's reservations.
func releasePorts(owner string) {
	entries, _ := os.ReadDir(portReservations())
	for _, e := range entries {
		path := filepath.Join(portReservations(), e.Name())
		if raw, err := os.ReadFile(path); err == nil && string(raw) == owner {
			_ = os.Remove(path)
		}
	}
}
