package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/process"
)

// Cluster names of the lab.
const (
	Hub  = "hub"
	East = "east"
	West = "west"
)

// DirEnv names the environment variable that overrides the default lab directory.
const DirEnv = "DROVER_LAB_DIR"

// DefaultDir is the lab directory when neither a flag nor DirEnv names one.
const DefaultDir = ".lab"

// stateFile records the lab's clusters and ports in the lab directory.
const stateFile = "lab.json"

// Options configure a Lab.
type Options struct {
	// Dir holds all lab state: certificates, etcd data, volumes, logs. Required.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
	// kwok-stages.yaml and versitygw, as hack/build-tools.sh builds them. Required.
	BinDir string
	// DroverBinary runs the lab storage controller (`drover lab storage-controller`). Required.
	DroverBinary string
	// Progress receives a line per step of long operations; nil discards them.
	Progress io.Writer
	// TieToParent kills the lab's processes when the process that started them dies. Tests set
	// it so a crashed test binary leaves nothing behind; the CLI does not, so the lab outlives
	// `drover lab up`.
	TieToParent bool
	// RunDrover runs drover in the lab as a user installs it (install.go): each cluster runs a
	// lab kubelet (internal/lab/kubelet); the lab applies the release manifests this binary embeds
	// (config.Tree) with server-side apply, joins east and west as `drover cluster join` does,
	// and creates the policies PolicyVolRep and PolicyVolSync; the Deployments' pods run as
	// processes of the drover binary with their ServiceAccounts' in-cluster configuration,
	// drover's only identities. The CLI sets it; test labs leave it off by default because most
	// suites run the hub and agents in-process.
	RunDrover bool
	// AppKubelet runs the lab kubelet on the managed clusters when drover does not run in the
	// lab (RunDrover off, the hub and agents in the test's process): application pods that run
	// as processes (story.Case.AppProcesses, PostgreSQL) need it. With RunDrover every cluster
	// runs one whatever this says.
	AppKubelet bool
	// Installer installs drover's release on each cluster in place of the release manifests
	// (install.go), when RunDrover is set; nil applies the release manifests. Only the install at
	// the clusters' first start uses it: the lab records that it runs drover, not how it was
	// installed.
	Installer Installer
	// HubProbeInterval and HubUnreachableAfter are added to the hub's Deployment (--probe-interval,
	// --unreachable-after) when set; zero keeps the hub's defaults. Tests shorten them.
	HubProbeInterval    time.Duration
	HubUnreachableAfter time.Duration
	// HubArgs and AgentArgs are added to the args of the hub's and the agents' Deployments, as an
	// overlay would (`drover lab up --hub-arg --drpc-workers=32`): to measure drover with other
	// flags. Each must be a flag ("--name=value"). They apply when drover is installed, at a
	// cluster's first start.
	HubArgs   []string
	AgentArgs []string
	// GitOps runs a GitOps tool once the clusters are up: GitOpsArgoCD is a real Argo CD in
	// placement mode (gitops.go; `make tools-argocd` builds it). Empty runs none. Down stops it
	// whatever this says.
	GitOps string
	// Monitoring runs a real Prometheus once drover is installed (monitoring.go; `make
	// tools-monitoring` builds it). It needs RunDrover. Down stops it whatever this says.
	Monitoring bool
	// Audit gives every API server an audit log (audit.go) from the clusters' next start on; a
	// cluster keeps it until `drover lab down`.
	Audit bool
	// UpstreamCRDs names a directory of upstream CRDs (crds.UpstreamEnv; for tests the one
	// upstream.Dir finds) that the clusters serve verbatim, read at each
	// start, in place of the lab's own CRDs of the same kinds (bootstrap.go, externalCRDs). The
	// lab records it, so a later start of the same lab serves them too.
	UpstreamCRDs string
	// MultiClusterNetwork joins the managed clusters in the lab's multi-cluster network
	// (network.go): ServiceExports are exported and their clusterset addresses resolve from
	// the peer. The lab records it; SetMultiClusterNetwork changes it.
	MultiClusterNetwork bool
}

// Lab is a hub and two managed clusters of real Kubernetes control planes on this machine.
type Lab struct {
	opts     Options
	clusters []*Cluster
	scheme   *runtime.Scheme
	mu       sync.Mutex
}

type labState struct {
	Clusters []*Cluster `json:"clusters"`
	// Install is installedFromManifests when the lab runs drover; "processes" in labs of earlier
	// drovers, which New refuses.
	Install string `json:"install,omitempty"`
	// UpstreamCRDs is Options.UpstreamCRDs of the lab's last up or start.
	UpstreamCRDs string `json:"upstreamCRDs,omitempty"`
	// MultiClusterNetwork is Options.MultiClusterNetwork as last set.
	MultiClusterNetwork bool `json:"multiClusterNetwork,omitempty"`
}

// New returns the lab in opts.Dir. It reads the recorded ports when the lab was created before
// and picks free ones otherwise; it starts nothing.
func New(opts Options) (*Lab, error) {
	if opts.Dir == "" || opts.BinDir == "" || opts.DroverBinary == "" {
		return nil, errors.New("lab options need Dir, BinDir and DroverBinary")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve lab directory %s: %w", opts.Dir, err)
	}
	opts.Dir = dir
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	for _, a := range append(slices.Clone(opts.HubArgs), opts.AgentArgs...) {
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("drover argument %q is not a flag: give it as --name=value", a)
		}
	}
	if err := validGitOps(opts.GitOps); err != nil {
		return nil, err
	}
	if opts.UpstreamCRDs != "" {
		if opts.UpstreamCRDs, err = filepath.Abs(opts.UpstreamCRDs); err != nil {
			return nil, fmt.Errorf("failed to resolve the upstream CRDs' directory %s: %w", opts.UpstreamCRDs, err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	l := &Lab{opts: opts, scheme: scheme}
	state, err := l.readState()
	if err != nil {
		return nil, err
	}
	l.clusters = state.Clusters
	if l.opts.UpstreamCRDs == "" {
		l.opts.UpstreamCRDs = state.UpstreamCRDs
	}
	if !l.opts.MultiClusterNetwork {
		l.opts.MultiClusterNetwork = state.MultiClusterNetwork
	}
	if err := l.adoptInstall(state.Install); err != nil {
		return nil, err
	}
	for _, c := range l.clusters {
		c.lab = l
		c.dir = filepath.Join(dir, c.Name)
		// A lab created before managed clusters had S3 servers or proxies gets their ports now;
		// the next up or start records them.
		if c.Role != RoleManaged {
			continue
		}
		for _, port := range []*int{&c.Ports.S3, &c.Ports.APIProxy, &c.Ports.S3Proxy} {
			if *port != 0 {
				continue
			}
			if *port, err = process.ReservePort(dir); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// Dir is the lab's state directory.
func (l *Lab) Dir() string { return l.opts.Dir }

// Clusters returns the lab's clusters, hub first.
func (l *Lab) Clusters() []*Cluster { return l.clusters }

// Cluster returns the named cluster.
func (l *Lab) Cluster(name string) (*Cluster, error) {
	for _, c := range l.clusters {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("the lab has no cluster %q; its clusters are %s, %s and %s", name, Hub, East, West)
}

// adoptInstall refuses a lab that an earlier drover created to run drover's processes with lab
// credentials: its clusters hold no release manifests.
func (l *Lab) adoptInstall(recorded string) error {
	if recorded != "" && recorded != installedFromManifests {
		return fmt.Errorf("the lab in %s was created by an earlier drover that ran drover with lab credentials (%s): run `drover lab down`, then `drover lab up` installs drover from its release manifests", l.opts.Dir, recorded)
	}
	if recorded == installedFromManifests {
		l.opts.RunDrover = true
	}
	return nil
}

// installRecord is what the lab's state records of how it runs drover.
func (l *Lab) installRecord() string {
	if l.opts.RunDrover {
		return installedFromManifests
	}
	return ""
}

func (l *Lab) readState() (*labState, error) {
	raw, err := os.ReadFile(filepath.Join(l.opts.Dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return l.newState()
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read lab state: %w", err)
	}
	state := &labState{}
	if err := json.Unmarshal(raw, state); err != nil {
		return nil, fmt.Errorf("lab state %s is damaged (%w): run `drover lab down` to remove the lab", filepath.Join(l.opts.Dir, stateFile), err)
	}
	return state, nil
}

func (l *Lab) newState() (*labState, error) {
	state := &labState{}
	for _, spec := range []struct {
		name string
		role Role
	}{{Hub, RoleHub}, {East, RoleManaged}, {West, RoleManaged}} {
		c := &Cluster{Name: spec.name, Role: spec.role}
		ports := []*int{&c.Ports.Etcd, &c.Ports.EtcdPeer, &c.Ports.APIServer}
		if spec.role == RoleManaged {
			ports = append(ports, &c.Ports.S3, &c.Ports.APIProxy, &c.Ports.S3Proxy)
		}
		for _, p := range ports {
			port, err := process.ReservePort(l.opts.Dir)
			if err != nil {
				return nil, err
			}
			*p = port
		}
		state.Clusters = append(state.Clusters, c)
	}
	return state, nil
}

func (l *Lab) writeState() error {
	if err := os.MkdirAll(l.opts.Dir, 0o750); err != nil {
		return fmt.Errorf("failed to create lab directory: %w", err)
	}
	raw, err := json.MarshalIndent(labState{Clusters: l.clusters, Install: l.installRecord(), UpstreamCRDs: l.opts.UpstreamCRDs,
		MultiClusterNetwork: l.opts.MultiClusterNetwork}, "", "  ")
	if err != nil {
		return err
	}
	if err := l.applyMultiClusterNetwork(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.opts.Dir, stateFile), raw, 0o600); err != nil {
		return fmt.Errorf("failed to write lab state: %w", err)
	}
	return nil
}

// lock serialises lab operations across processes (two `drover lab up` at once).
func (l *Lab) lock() (func(), error) {
	if err := os.MkdirAll(l.opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("failed to create lab directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(l.opts.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open lab lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock lab: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

func (l *Lab) progress(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.opts.Progress, format+"\n", args...)
}

// Up starts every cluster that is not running, in parallel. It returns alreadyRunning when all
// of them were, and starts nothing then.
func (l *Lab) Up(ctx context.Context) (alreadyRunning bool, err error) {
	unlock, err := l.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	if err := l.writeState(); err != nil {
		return false, err
	}
	var todo []*Cluster
	for _, c := range l.clusters {
		ok, err := c.running()
		if err != nil {
			return false, err
		}
		if !ok {
			todo = append(todo, c)
		} else if err := l.checkAudited(c); err != nil {
			return true, err
		}
	}
	if len(todo) == 0 {
		return true, l.startExtras(ctx)
	}
	began := time.Now()
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, c := range todo {
		wg.Go(func() {
			start := time.Now()
			if errs[i] = c.start(ctx); errs[i] == nil {
				l.progress("%s: up (%.1f s)", c.Name, time.Since(start).Seconds())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	if l.opts.RunDrover {
		if err := l.installDrover(ctx); err != nil {
			return false, err
		}
	}
	if err := l.startExtras(ctx); err != nil {
		return false, err
	}
	l.progress("lab: up in %.1f s; kubeconfigs under %s/<cluster>/kubeconfig", time.Since(began).Seconds(), l.opts.Dir)
	return false, nil
}

// startExtras starts what runs beside the clusters once they are up: the GitOps tool and
// Prometheus, when the options ask for them.
func (l *Lab) startExtras(ctx context.Context) error {
	if err := l.startGitOps(ctx); err != nil {
		return err
	}
	if !l.opts.Monitoring {
		return nil
	}
	_, err := l.StartMonitoring(ctx)
	return err
}

// Start brings one stopped cluster back with the objects it had.
func (l *Lab) Start(ctx context.Context, name string) error {
	c, err := l.Cluster(name)
	if err != nil {
		return err
	}
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(l.opts.Dir, stateFile)); err != nil {
		return fmt.Errorf("there is no lab in %s: run `drover lab up` first", l.opts.Dir)
	}
	// The state may have gained ports since it was written (see New).
	if err := l.writeState(); err != nil {
		return err
	}
	began := time.Now()
	if err := c.start(ctx); err != nil {
		return err
	}
	// Installed drover lives in the clusters' etcd and comes back with its cluster.
	l.progress("%s: started (%.1f s)", name, time.Since(began).Seconds())
	return nil
}

// Stop ends every process of one cluster, its storage included, as a lost cluster would.
func (l *Lab) Stop(name string) error {
	return l.withCluster(name, (*Cluster).stop)
}

// withCluster runs do on the cluster called name under the lab's lock.
func (l *Lab) withCluster(name string, do func(*Cluster) error) error {
	c, err := l.Cluster(name)
	if err != nil {
		return err
	}
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return do(c)
}

// KillStorage kills one cluster's storage controller at once (SIGKILL), as a site's power loss
// takes its storage: from that instant its volumes are mirrored no more, while the rest of the
// cluster runs until Stop. Stop stops a cluster's kubelet, and so its pods, before its storage,
// which mirrors on meanwhile; a test that needs the loss of a cluster to cut its volumes'
// replication at one instant, with the application still writing, calls this first. Start
// brings the storage back with the cluster.
func (l *Lab) KillStorage(name string) error {
	return l.withCluster(name, (*Cluster).killStorage)
}

func (c *Cluster) killStorage() error {
	name := c.Name
	procs, err := c.processes()
	if err != nil {
		return err
	}
	p, ok := procs[componentStorage]
	if !ok {
		return fmt.Errorf("cluster %s runs no storage controller", name)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("failed to kill the storage controller of %s: %w", name, err)
	}
	for deadline := time.Now().Add(5 * time.Second); process.Alive(p.PID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the storage controller of %s (pid %d) still runs 5 s after SIGKILL", name, p.PID)
		}
	}
	return nil
}

// Down ends every process of the lab, including those of a crashed earlier run, and removes
// the lab directory.
func (l *Lab) Down() error {
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	// Argo CD first, so its controllers do not spend their shutdown retrying dead API servers.
	if err := l.stopGitOps(); err != nil {
		unlock()
		return err
	}
	// Clusters stop in parallel: each waits for its components to exit in turn.
	var wg sync.WaitGroup
	errs := make([]error, len(l.clusters))
	for i, c := range l.clusters {
		wg.Go(func() { errs[i] = c.stop() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		unlock()
		return err
	}
	left, err := findProcesses(l.opts.Dir + string(filepath.Separator))
	if err != nil {
		unlock()
		return err
	}
	process.Stop(left, stopGrace)
	unlock()
	process.ReleasePorts(l.opts.Dir)
	if err := os.RemoveAll(l.opts.Dir); err != nil {
		return fmt.Errorf("failed to remove lab directory %s: %w", l.opts.Dir, err)
	}
	return nil
}

// client returns an administrator controller-runtime client for the cluster.
func (c *Cluster) client() (client.Client, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.lab.scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create client for cluster %s: %w", c.Name, err)
	}
	return cl, nil
}
