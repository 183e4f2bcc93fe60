package argocd

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
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
	process.Command
	// ready answers nil once the component serves.
	ready func(ctx context.Context) error
}

// findProcesses returns the running processes whose executable path (argv[0]) is in binDir,
// by component name. The path survives a crashed CLI and lost pid files.
func findProcesses(binDir string) (map[string]process.Proc, error) {
	prefix := binDir + string(filepath.Separator)
	procs, err := process.Find(func(p process.Proc) bool {
		return strings.HasPrefix(p.Args[0], prefix) && process.Alive(p.PID)
	})
	if err != nil {
		return nil, err
	}
	found := map[string]process.Proc{}
	for _, p := range procs {
		found[filepath.Base(p.Args[0])] = p
	}
	return found, nil
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
	logPath := filepath.Join(logDir, c.Name+".log")
	for {
		if !process.Alive(pid) {
			return fmt.Errorf("%s exited while starting; the end of %s:\n%s", c.Name, logPath, process.Tail(logPath, 15))
		}
		err := c.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready in %s (%w); see %s", c.Name, readyTimeout, err, logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
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
