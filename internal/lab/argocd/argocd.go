package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/lab/process"
)

// Binary is Argo CD's multi-call binary in the lab's bin directory.
const Binary = "argocd"

// Options configure an Argo CD instance.
type Options struct {
	// Dir holds the instance's state: the git repository, the components' links, logs and redis
	// files. Required; the lab uses <lab>/argocd.
	Dir string
	// BinDir holds argocd, argocd-crds/ and argocd-path/ as `make tools-argocd` builds them.
	// Required.
	BinDir string
	// HubKubeconfig is an administrator kubeconfig of the hub, where Argo CD keeps its objects
	// and reads the PlacementDecisions. Required.
	HubKubeconfig string
	// Clusters are the managed clusters Argo CD deploys to, by the name the PlacementDecisions
	// use (the Argo CD cluster Secret's name). At least one.
	Clusters map[string]ClusterAccess
	// Ports are the loopback ports to use; zero fields are picked (and reserved as the lab
	// reserves its own) the first time the instance starts.
	Ports Ports
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
	// TieToParent kills the processes when the process that started them dies (tests).
	TieToParent bool
}

// Instance is an Argo CD running in the lab, or the handle Open returns to inspect or stop one.
type Instance struct {
	dir   string
	ports Ports
}

// stateFile records the instance's ports in its directory.
const stateFile = "argocd.json"

type state struct {
	Ports Ports `json:"ports"`
}

// Open returns the instance whose state is in dir, without starting anything. It fails when no
// instance was ever started there.
func Open(dir string) (*Instance, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve %s: %w", dir, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("no Argo CD was started in %s: %w", dir, err)
	}
	st := state{}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("the Argo CD state %s is damaged: %w", filepath.Join(dir, stateFile), err)
	}
	return &Instance{dir: dir, ports: st.Ports}, nil
}

// Start installs Argo CD's objects on the hub and starts whatever of redis-server, repo-server,
// the application controller and the applicationset controller is not running, waiting until
// each serves. It is idempotent: on a running instance it re-applies the hub objects and starts
// nothing.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	if opts.Dir == "" || opts.BinDir == "" || opts.HubKubeconfig == "" || len(opts.Clusters) == 0 {
		return nil, errors.New("argocd options need Dir, BinDir, HubKubeconfig and at least one cluster")
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	var err error
	for _, p := range []*string{&opts.Dir, &opts.BinDir, &opts.HubKubeconfig} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	argocdBin := filepath.Join(opts.BinDir, Binary)
	if _, err := os.Stat(argocdBin); err != nil {
		return nil, fmt.Errorf("the Argo CD binary %s is missing: run `make tools-argocd`", argocdBin)
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not installed: run `make tools-argocd` (as root it installs Debian's redis-server)")
	}
	i := &Instance{dir: opts.Dir}
	for _, d := range []string{i.binDir(), i.logDir(), i.tmpDir(), i.redisDir(), i.homeDir()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	running, err := findProcesses(i.binDir())
	if err != nil {
		return nil, err
	}
	if err := i.preparePorts(opts.Ports, len(running) > 0); err != nil {
		return nil, err
	}
	began := time.Now()
	if err := ensureRepo(ctx, opts.Dir); err != nil {
		return nil, err
	}
	hub, err := hubClient(opts.HubKubeconfig)
	if err != nil {
		return nil, err
	}
	if err := installOnHub(ctx, hub, filepath.Join(opts.BinDir, "argocd-crds"), opts.Clusters); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "argocd: CRDs, settings and %d cluster Secrets on the hub (%.1f s)\n", len(opts.Clusters), time.Since(began).Seconds())
	comps, err := i.components(opts, argocdBin, redisBin)
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		if _, ok := running[c.Name]; ok {
			continue
		}
		start := time.Now()
		pid, err := c.Start(i.logDir(), opts.TieToParent)
		if err != nil {
			return nil, err
		}
		if err := c.waitReady(ctx, pid, i.logDir()); err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Progress, "argocd: %s up (%.1f s)\n", c.Name, time.Since(start).Seconds())
	}
	return i, nil
}

// preparePorts takes the recorded ports while any component runs (they must keep talking to
// each other) and otherwise reserves fresh ones where opts leaves them zero.
func (i *Instance) preparePorts(want Ports, anyRunning bool) error {
	if anyRunning {
		if old, err := Open(i.dir); err == nil {
			i.ports = old.ports
			return nil
		}
	}
	process.ReleasePorts(i.dir)
	i.ports = want
	for _, p := range i.ports.all() {
		if *p != 0 {
			continue
		}
		port, err := process.ReservePort(i.dir)
		if err != nil {
			return err
		}
		*p = port
	}
	raw, err := json.MarshalIndent(state{Ports: i.ports}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(i.dir, stateFile), raw, 0o600); err != nil {
		return fmt.Errorf("failed to record the Argo CD ports: %w", err)
	}
	return nil
}

func hubClient(path string) (client.Client, error) {
	cfg, err := kubeconfig.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the hub's kubeconfig %s: %w", path, err)
	}
	cfg.Timeout = 30 * time.Second
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// Dir is the instance's state directory.
func (i *Instance) Dir() string { return i.dir }

// RepoURL is the file:// URL of the instance's git repository (the demo application is under
// AppPath).
func (i *Instance) RepoURL() string { return RepoURL(i.dir) }

// Ports are the instance's loopback ports.
func (i *Instance) Ports() Ports { return i.ports }

func (i *Instance) binDir() string   { return filepath.Join(i.dir, "bin") }
func (i *Instance) logDir() string   { return filepath.Join(i.dir, "logs") }
func (i *Instance) tmpDir() string   { return filepath.Join(i.dir, "tmp") }
func (i *Instance) redisDir() string { return filepath.Join(i.dir, "redis") }
func (i *Instance) homeDir() string  { return filepath.Join(i.dir, "home") }

// LogPath is the log file of a component.
func (i *Instance) LogPath(component string) string {
	return filepath.Join(i.logDir(), component+".log")
}

// components returns the four processes with the flags and environment Argo CD needs outside a
// cluster: the controllers read the hub through --kubeconfig and KUBECONFIG with
// ARGOCD_FAKE_IN_CLUSTER (they otherwise insist on a service account), everything on loopback,
// the repo-server without TLS or GPG and with Argo CD's git helper scripts on its PATH.
func (i *Instance) components(opts Options, argocdBin, redisBin string) ([]component, error) {
	links := map[string]string{ComponentRedis: redisBin}
	for _, name := range componentOrder[1:] {
		links[name] = argocdBin
	}
	for name, target := range links {
		link := filepath.Join(i.binDir(), name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return nil, fmt.Errorf("failed to link %s: %w", link, err)
		}
	}
	conf := filepath.Join(i.redisDir(), "redis.conf")
	// set-proc-title no keeps redis's command line, which names this directory, so the /proc
	// scan finds it.
	redisConf := fmt.Sprintf("bind 127.0.0.1\nport %d\nprotected-mode yes\nsave \"\"\nappendonly no\nset-proc-title no\ndir %s\n",
		i.ports.Redis, i.redisDir())
	if err := os.WriteFile(conf, []byte(redisConf), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write %s: %w", conf, err)
	}
	p := i.ports
	redis := "127.0.0.1:" + strconv.Itoa(p.Redis)
	repoServer := "127.0.0.1:" + strconv.Itoa(p.RepoServer)
	env := []string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + opts.HubKubeconfig, "TMPDIR=" + i.tmpDir(), "HOME=" + i.homeDir()}
	bin := func(name string) string { return filepath.Join(i.binDir(), name) }
	return []component{
		{Command: process.Command{Name: ComponentRedis, Binary: bin(ComponentRedis), Args: []string{conf}}, ready: tcpListening(p.Redis)},
		{Command: process.Command{Name: ComponentRepoServer, Binary: bin(ComponentRepoServer), Args: []string{
			"--address=127.0.0.1", "--port=" + strconv.Itoa(p.RepoServer),
			"--metrics-address=127.0.0.1", "--metrics-port=" + strconv.Itoa(p.RepoServerMetrics),
			"--redis=" + redis, "--disable-tls", "--client-ca-path=", "--loglevel=info",
		}, Env: append(slices.Clone(env), "ARGOCD_GPG_ENABLED=false",
			"PATH="+filepath.Join(opts.BinDir, "argocd-path")+string(os.PathListSeparator)+os.Getenv("PATH"))},
			ready: tcpListening(p.RepoServer)},
		{Command: process.Command{Name: ComponentAppController, Binary: bin(ComponentAppController), Args: []string{
			"--kubeconfig=" + opts.HubKubeconfig, "--namespace=" + Namespace,
			"--repo-server=" + repoServer, "--repo-server-plaintext", "--redis=" + redis,
			"--metrics-port=" + strconv.Itoa(p.ControllerMetrics), "--loglevel=info",
		}, Env: env}, ready: httpOK(p.ControllerMetrics, "/healthz")},
		{Command: process.Command{Name: ComponentAppSetController, Binary: bin(ComponentAppSetController), Args: []string{
			"--kubeconfig=" + opts.HubKubeconfig, "--namespace=" + Namespace,
			"--argocd-repo-server=" + repoServer, "--repo-server-plaintext",
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(p.AppSetMetrics),
			"--probe-addr=127.0.0.1:" + strconv.Itoa(p.AppSetProbe),
			"--webhook-addr=127.0.0.1:" + strconv.Itoa(p.AppSetWebhook),
			"--enable-leader-election=false", "--loglevel=info",
		}, Env: env}, ready: tcpListening(p.AppSetProbe)}, // it registers no health checks: /readyz is 404
	}, nil
}

// httpOK answers nil once http://127.0.0.1:port<path> answers 200.
func httpOK(port int, path string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s", path, resp.Status)
		}
		return nil
	}
}

// stopGrace is how long a component may take to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// Stop stops the instance's processes, controllers first, and releases its ports. Its state
// (repository, logs) stays; objects on the hub are left alone. Stopping a stopped instance does
// nothing.
func (i *Instance) Stop() error {
	running, err := findProcesses(i.binDir())
	if err != nil {
		return err
	}
	var procs []process.Proc
	for _, name := range slices.Backward(componentOrder) {
		if p, ok := running[name]; ok {
			procs = append(procs, p)
		}
	}
	process.StopInTurn(procs, stopGrace)
	process.ReleasePorts(i.dir)
	if left, err := findProcesses(i.binDir()); err == nil && len(left) > 0 {
		return fmt.Errorf("%d Argo CD processes of %s survived SIGKILL", len(left), i.dir)
	}
	return nil
}

// ComponentStatus is one process of the instance.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
	RSSKiB  int64
}

// Status is what `drover lab status` shows of Argo CD.
type Status struct {
	Dir     string
	RepoURL string
	// Healthy is true when every component runs.
	Healthy    bool
	Components []ComponentStatus
}

// Status reports the instance's processes. It changes nothing.
func (i *Instance) Status() (Status, error) {
	running, err := findProcesses(i.binDir())
	if err != nil {
		return Status{}, err
	}
	st := Status{Dir: i.dir, RepoURL: i.RepoURL(), Healthy: true}
	for _, name := range componentOrder {
		p, ok := running[name]
		cs := ComponentStatus{Name: name, Running: ok}
		if ok {
			cs.PID, cs.RSSKiB = p.PID, process.RSSKiB(p.PID)
		} else {
			st.Healthy = false
		}
		st.Components = append(st.Components, cs)
	}
	return st, nil
}

// PrintStatus writes the instance's status for `drover lab status`: a line per component (a
// stopped one with its log) and the git repository.
func PrintStatus(w io.Writer, st Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nARGO CD\tSTATE\tPID\tRSS")
	for _, c := range st.Components {
		if c.Running {
			fmt.Fprintf(tw, "%s\trunning\t%d\t%d MiB\n", c.Name, c.PID, c.RSSKiB/1024)
		} else {
			fmt.Fprintf(tw, "%s\tnot running (log: %s)\t-\t-\n", c.Name, filepath.Join(st.Dir, "logs", c.Name+".log"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Argo CD reads %s (the demo application is under %s)\n", st.RepoURL, AppPath)
	return err
}
