package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
)

// componentNames lists every component, for recognising lab processes; the lab's Prometheus
// (monitoring.go) runs beside the clusters and is recognised too, so `lab down` stops it.
var componentNames = []string{
	componentEtcd, componentAPIServer, componentKCM, componentScheduler, componentKwok, componentStorage, componentS3,
	componentKubelet, componentPrometheus, componentProxy,
}

const (
	// componentReadyTimeout bounds the wait for etcd or the API server to answer after a start.
	componentReadyTimeout = 90 * time.Second
	// stopGrace is how long a component gets to exit after SIGTERM before it is killed.
	stopGrace = 10 * time.Second
	// readyPollInterval is how often a starting component is probed.
	readyPollInterval = 100 * time.Millisecond
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

// Every component's command line names its cluster directory (data dir, kubeconfig or certs), so
// the lab finds its processes by scanning /proc for that path. This survives a crashed `drover`
// CLI and lost pid files: `lab down` after a crash still finds everything it started.
func findProcesses(pathFragment string) ([]process.Proc, error) {
	return process.Find(func(p process.Proc) bool {
		// Only the lab's own binaries: a shell or an editor with a lab file open is left alone.
		return namesOwnPath(p.Args, pathFragment) && !isLabCLI(p.Args) && slices.Contains(componentNames, componentOf(p.Args))
	})
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
func componentOf(args []string) string {
	if len(args) > 2 && args[1] == "lab" && args[2] == storageControllerVerb {
		return componentStorage
	}
	if len(args) > 2 && args[1] == "lab" && args[2] == kubeletVerb {
		return componentKubelet
	}
	if len(args) > 2 && args[1] == "lab" && args[2] == proxyVerb {
		return componentProxy
	}
	base := filepath.Base(args[0])
	if name, ok := componentByBinary[base]; ok {
		return name
	}
	return base
}

// start launches c detached from the caller (process.Command.Start), so it outlives a `drover
// lab up` that exits. Output goes to logDir/<name>.log. When tieToParent is set (tests), the
// process is killed if the starting process dies.
func (c component) start(logDir string, tieToParent bool) (int, error) {
	if _, err := os.Stat(c.binary); err != nil {
		return 0, fmt.Errorf("binary %s for %s is missing: run `make tools` (or hack/build-tools.sh) to build it", c.binary, c.name)
	}
	return process.Command{Name: c.name, Binary: c.binary, Args: c.args, Env: c.env}.Start(logDir, tieToParent)
}

// checkPortFree fails with an error that names the port and its user when port is taken.
func checkPortFree(port int, user string) error {
	if process.PortFree(port) != nil {
		return fmt.Errorf("port %d (for %s) is in use by another process: stop that process, or run `drover lab down` and `drover lab up` to pick new ports", port, user)
	}
	return nil
}

// processes returns the cluster's running processes by component name.
func (c *Cluster) processes() (map[string]process.Proc, error) {
	procs, err := findProcesses(c.dir + string(filepath.Separator))
	if err != nil {
		return nil, err
	}
	byName := map[string]process.Proc{}
	for _, p := range procs {
		byName[componentOf(p.Args)] = p
	}
	return byName, nil
}

// running reports whether every component of the cluster has a live process.
func (c *Cluster) running() (bool, error) {
	procs, err := c.processes()
	if err != nil {
		return false, err
	}
	for _, comp := range c.components() {
		if p, ok := procs[comp.name]; !ok || !process.Alive(p.PID) {
			return false, nil
		}
	}
	return true, nil
}

// checkStarted reports a component that crashed at once (bad flag, missing file) now, not at
// first use. kwok alone is started again, once: it keeps nothing of its own (its nodes and pods
// are the API server's), and kwok v0.8.0 can die at start with "concurrent map writes" while it
// replays the stages of pods deleted while it was down, which would leave the cluster with no
// kubelet for the rest of a test run.
func (c *Cluster) checkStarted(comps []component) error {
	for attempt := 0; ; attempt++ {
		time.Sleep(300 * time.Millisecond)
		procs, err := c.processes()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(comps, func(comp component) bool {
			p, ok := procs[comp.name]
			return !ok || !process.Alive(p.PID)
		})
		if i < 0 {
			return nil
		}
		if comps[i].name != componentKwok || attempt > 0 {
			return c.diedError(comps[i])
		}
		c.lab.progress("%s: kwok exited right after it started; starting it again", c.Name)
		if _, err := comps[i].start(c.logDir(), c.lab.opts.TieToParent); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
}

func (c *Cluster) diedError(comp component) error {
	logPath := filepath.Join(c.logDir(), comp.name+".log")
	return fmt.Errorf("cluster %s: %s exited right after it started; last lines of %s:\n%s", c.Name, comp.name, logPath, process.ErrorExcerpt(logPath, 10))
}

// waitReady polls probe until it succeeds, the process dies, or componentReadyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, comp component, pid int, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, componentReadyTimeout)
	defer cancel()
	var lastErr error
	for {
		if lastErr = probe(ctx); lastErr == nil {
			return nil
		}
		if !process.Alive(pid) {
			return c.diedError(comp)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s: %s did not become ready in %s (last error: %w); see %s",
				c.Name, comp.name, componentReadyTimeout, lastErr, filepath.Join(c.logDir(), comp.name+".log"))
		case <-time.After(readyPollInterval):
		}
	}
}

func httpGet(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
