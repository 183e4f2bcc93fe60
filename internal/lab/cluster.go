package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/process"
)

// Role says what a lab cluster is for.
type Role string

const (
	// RoleHub is the control cluster where `drover hub` runs.
	RoleHub Role = "hub"
	// RoleManaged is a cluster that runs applications, lab storage and `drover agent`.
	RoleManaged Role = "managed"
)

// Ports are the loopback ports of one cluster, chosen at the first `up` and kept, so
// kubeconfigs stay valid across `stop` and `start`.
type Ports struct {
	Etcd      int `json:"etcd"`
	EtcdPeer  int `json:"etcdPeer"`
	APIServer int `json:"apiServer"`
	// S3 is the S3 server of a managed cluster's profile; zero on the hub.
	S3 int `json:"s3,omitempty"`
	// APIProxy and S3Proxy are a managed cluster's proxies (partition.go), through which the
	// hub and the peer reach its API server and S3 store; zero on the hub.
	APIProxy int `json:"apiProxy,omitempty"`
	S3Proxy  int `json:"s3Proxy,omitempty"`
}

// Cluster is one lab cluster: its directory, ports and processes.
type Cluster struct {
	Name  string `json:"name"`
	Role  Role   `json:"role"`
	Ports Ports  `json:"ports"`

	dir string
	lab *Lab
}

// Dir is the cluster's state directory.
func (c *Cluster) Dir() string { return c.dir }

// KubeconfigPath is the path of an administrator kubeconfig for the cluster.
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.dir, "kubeconfig") }

// Endpoint is the URL of the cluster's API server.
func (c *Cluster) Endpoint() string { return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIServer) }

// RESTConfig returns an administrator client configuration for the cluster.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := kubeconfig.FromFile(c.KubeconfigPath())
	if err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig of cluster %s: %w", c.Name, err)
	}
	// The lab's API servers are local; the defaults (5 QPS) would make tests measure the client.
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg, nil
}

// Kubeconfig returns a kubeconfig for the cluster that authenticates as user in groups, signed
// by the cluster's CA. Use it to hand out credentials with less than administrator rights.
func (c *Cluster) Kubeconfig(user string, groups []string) ([]byte, error) {
	return c.pki().kubeconfig(c.Name, c.Endpoint(), user, groups)
}

func (c *Cluster) pki() pki               { return pki{dir: filepath.Join(c.dir, "pki")} }
func (c *Cluster) logDir() string         { return filepath.Join(c.dir, "logs") }
func (c *Cluster) storageDir() string     { return filepath.Join(c.dir, "storage") }
func (c *Cluster) bin(name string) string { return filepath.Join(c.lab.opts.BinDir, name) }

// LogDir holds the logs of the cluster's processes, its lab kubelet's containers' among them
// (kubelet.LogPath).
func (c *Cluster) LogDir() string { return c.logDir() }

// peer returns the other managed cluster (the mirroring peer) of a managed cluster.
func (c *Cluster) peer() *Cluster {
	for _, o := range c.lab.clusters {
		if o.Role == RoleManaged && o.Name != c.Name {
			return o
		}
	}
	return c
}

// A cluster starts as an ordered list of steps, one per component (component_<name>.go holds
// each one's flags and readiness), sharing one startContext, as kind brings a node up as an
// ordered list of actions sharing one ActionContext (kind pkg/cluster/internal/create/create.go).

// step is one component of a cluster's start.
type step struct {
	component
	// ready, when set, waits after the start until the component serves, and does what must
	// follow at once (the API server's bootstrap, the S3 bucket), before the next step starts.
	ready func(ctx context.Context, sc *startContext, comp component, pid int) error
}

// startContext is what the steps of one start share.
type startContext struct {
	// s3 is a managed cluster's S3 profile, its endpoint the server's own address (its proxy
	// starts after it).
	s3 S3Profile
	// stepBegan is when the current step's process was started.
	stepBegan time.Time
}

// steps lists the cluster's components in start order: the control plane; on a managed cluster
// its scheduler, fake nodes, storage, S3 store and proxy; then, when the lab runs drover, the
// lab kubelet. sc is nil where only the processes matter (stop, status).
func (c *Cluster) steps(sc *startContext) []step {
	steps := []step{c.etcdStep(), c.apiServerStep(), c.controllerManagerStep()}
	if c.Role == RoleManaged {
		steps = append(steps, c.schedulerStep(), c.kwokStep(), c.storageStep(), c.s3Step(sc), c.proxyStep())
	}
	if c.lab.opts.RunDrover || (c.lab.opts.AppKubelet && c.Role == RoleManaged) {
		steps = append(steps, c.kubeletStep())
	}
	return steps
}

// components lists the cluster's processes in start order.
func (c *Cluster) components() []component {
	return componentsOf(c.steps(nil))
}

func componentsOf(steps []step) []component {
	comps := make([]component, 0, len(steps))
	for _, s := range steps {
		comps = append(comps, s.component)
	}
	return comps
}

// start brings the cluster's processes up, in order, waiting for each to be ready. What is
// already running is stopped first so a half-started cluster comes back whole; etcd's data is
// kept, so the cluster returns with all its objects.
func (c *Cluster) start(ctx context.Context) error {
	sc, err := c.prepareStart()
	if err != nil {
		return err
	}
	steps := c.steps(sc)
	for _, s := range steps {
		sc.stepBegan = time.Now()
		pid, err := s.start(c.logDir(), c.lab.opts.TieToParent)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		if s.ready != nil {
			if err := s.ready(ctx, sc, s.component, pid); err != nil {
				return err
			}
		}
	}
	if c.Role == RoleManaged {
		if err := c.waitNodesReady(ctx); err != nil {
			return err
		}
	}
	return c.checkStarted(componentsOf(steps))
}

// prepareStart stops what runs of the cluster, prepares its files (and audit log), checks that
// its ports are free and, on a managed cluster, reads or creates its S3 profile.
func (c *Cluster) prepareStart() (*startContext, error) {
	if err := c.stop(); err != nil {
		return nil, err
	}
	if err := c.prepareFiles(); err != nil {
		return nil, err
	}
	if c.lab.opts.Audit {
		if err := c.enableAudit(); err != nil {
			return nil, err
		}
	}
	ports := map[int]string{
		c.Ports.Etcd: c.Name + " etcd", c.Ports.EtcdPeer: c.Name + " etcd peer", c.Ports.APIServer: c.Name + " kube-apiserver",
	}
	sc := &startContext{}
	if c.Role == RoleManaged {
		ports[c.Ports.S3] = c.Name + " S3 server"
		ports[c.Ports.APIProxy] = c.Name + " API proxy"
		ports[c.Ports.S3Proxy] = c.Name + " S3 proxy"
		var err error
		if sc.s3, err = c.ensureS3Profile(); err != nil {
			return nil, err
		}
		// The server is checked on its own address: its proxy starts after it.
		sc.s3.Endpoint = c.s3DirectEndpoint()
	}
	for port, user := range ports {
		if err := checkPortFree(port, user); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// prepareFiles creates the cluster's directories, its certificates and its administrator
// kubeconfig, keeping what exists.
func (c *Cluster) prepareFiles() error {
	dirs := []string{c.logDir(), c.storageDir()}
	if c.Role == RoleManaged {
		dirs = append(dirs, c.s3DataDir(), c.s3IAMDir())
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	if err := c.pki().ensure(); err != nil {
		return err
	}
	if err := c.pki().ensureKubeletCerts(kubelet.DefaultNodeName); err != nil {
		return err
	}
	if err := c.writeAdminKubeconfig(); err != nil {
		return err
	}
	return c.writeKubeconfig(c.controllerManagerKubeconfigPath(), controllerManagerUser)
}

func (c *Cluster) writeAdminKubeconfig() error {
	return c.writeKubeconfig(c.KubeconfigPath(), "lab-admin")
}

// writeKubeconfig writes, unless it exists, a kubeconfig at path for user in system:masters.
func (c *Cluster) writeKubeconfig(path, user string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	raw, err := c.Kubeconfig(user, []string{"system:masters"})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("failed to write kubeconfig of %s: %w", c.Name, err)
	}
	return nil
}

// stop ends every process of the cluster, in reverse start order so controllers do not spend
// their last seconds retrying a dead API server.
func (c *Cluster) stop() error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	comps := c.components()
	for i := len(comps) - 1; i >= 0; i-- {
		if p, ok := procs[comps[i].name]; ok {
			process.Stop([]process.Proc{p}, stopGrace)
			delete(procs, comps[i].name)
		}
	}
	// Anything else under the cluster directory (an older layout, a stray helper) goes too.
	rest := make([]process.Proc, 0, len(procs))
	for _, p := range procs {
		rest = append(rest, p)
	}
	process.Stop(rest, stopGrace)
	return nil
}
