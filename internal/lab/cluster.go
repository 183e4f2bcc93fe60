package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/drover-io/drover/internal/kubeconfig"
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

// Component names, as `drover lab status` shows them.
const (
	componentEtcd         = "etcd"
	componentAPIServer    = "kube-apiserver"
	componentKCM          = "kube-controller-manager"
	componentScheduler    = "kube-scheduler"
	componentKwok         = "kwok"
	componentStorage      = "lab-storage"
	componentS3           = "s3"
	storageControllerVerb = "storage-controller"
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

// peer returns the other managed cluster (the mirroring peer) of a managed cluster.
func (c *Cluster) peer() *Cluster {
	for _, o := range c.lab.clusters {
		if o.Role == RoleManaged && o.Name != c.Name {
			return o
		}
	}
	return c
}

// components lists the cluster's processes in start order: the control plane, on a managed
// cluster its scheduler, fake nodes, storage and S3 store, then drover.
func (c *Cluster) components() []component {
	comps := c.controlPlane()
	if c.Role == RoleManaged {
		comps = append(comps, c.managedComponents()...)
	}
	return append(comps, c.droverComponents()...)
}

// controlPlane is every cluster's etcd, kube-apiserver and kube-controller-manager.
func (c *Cluster) controlPlane() []component {
	p := c.pki()
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdPeer)
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.Etcd)
	comps := []component{
		{name: componentEtcd, binary: c.bin("etcd"), args: []string{
			"--name=" + c.Name,
			"--data-dir=" + filepath.Join(c.dir, "etcd"),
			"--listen-client-urls=" + etcdClient,
			"--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=" + etcdPeer,
			"--initial-advertise-peer-urls=" + etcdPeer,
			"--initial-cluster=" + c.Name + "=" + etcdPeer,
			// A lab loses nothing it cares about on a host crash; fsync would only slow every write.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=4294967296",
			"--log-level=warn",
		}},
		{name: componentAPIServer, binary: c.bin("kube-apiserver"), env: c.apiServerEnv(), args: append([]string{
			"--etcd-servers=" + etcdClient,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
			"--cert-dir=" + p.dir,
			"--tls-cert-file=" + p.path("apiserver.crt"),
			"--tls-private-key-file=" + p.path("apiserver.key"),
			"--client-ca-file=" + p.path("ca.crt"),
			"--service-account-issuer=" + c.Endpoint(),
			"--service-account-key-file=" + p.path("sa.pub"),
			"--service-account-signing-key-file=" + p.path("sa.key"),
			"--service-cluster-ip-range=10.96.0.0/16",
			"--authorization-mode=RBAC",
			"--allow-privileged=true",
			// Pods run on fake nodes and never use a token; the plugin would only add a race
			// between a namespace's creation and its default ServiceAccount.
			"--disable-admission-plugins=ServiceAccount",
			// /debug/pprof for the lab's administrator (kubectl get --raw), to find where an API
			// server's CPU goes under drover's load (docs/benchmarks.md, "Where the settled CPU goes").
			"--profiling=true",
			// The endpoint reconciler refuses a loopback advertise address; the lab has no
			// in-cluster clients that would use the kubernetes Service anyway.
			"--endpoint-reconciler-type=none",
		}, c.auditArgs()...)},
		{name: componentKCM, binary: c.bin("kube-controller-manager"), args: []string{
			// Its own identity, as a real cluster's: the API server's admission webhooks (drover's
			// fence) see the pods the Job controller creates as system:kube-controller-manager's.
			"--kubeconfig=" + c.controllerManagerKubeconfigPath(),
			"--secure-port=0",
			"--leader-elect=false",
			"--service-account-private-key-file=" + p.path("sa.key"),
			"--root-ca-file=" + p.path("ca.crt"),
			"--use-service-account-credentials=false",
			// Default client rates (20/30) and the binder's 15 s resync dominate failover time in
			// a lab (LAB-NOTES: 85 s vs 4.7 s to bind 300 PVCs).
			"--kube-api-qps=1000",
			"--kube-api-burst=2000",
			"--pvclaimbinder-sync-period=1s",
		}},
	}
	return comps
}

// apiServerEnv keeps the API server's webhook calls off the machine's proxy when drover's fence
// is reached through its Service.
func (c *Cluster) apiServerEnv() []string {
	if c.lab.opts.RunDrover {
		return noProxyEnv
	}
	return nil
}

// managedComponents are a managed cluster's scheduler, fake nodes, lab storage and S3 store.
func (c *Cluster) managedComponents() []component {
	kubeconfig := c.KubeconfigPath()
	return []component{
		{name: componentScheduler, binary: c.bin("kube-scheduler"), args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--secure-port=0",
			"--leader-elect=false",
		}},
		{name: componentKwok, binary: c.bin("kwok"), args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + c.bin("kwok-stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			// kwok acts for a node (runs and deletes its pods) only while it holds the node's
			// Lease, under an identity new in every process. A restarted kwok takes the Lease over
			// only once it expired, trying every renew interval (a quarter of the duration; the
			// first try after a start often fails, before its Lease cache is filled). With the
			// kubelet's 40 s, a cluster back from a short `stop` kept its deleted pods Terminating
			// and their volumes attached for 10-40 s, where a restarted kubelet renews its own
			// Lease at once. 4 s (renewed every second) makes the handover take about a second;
			// kcm judges nodes by its node-monitor grace period, which this does not change.
			"--node-lease-duration-seconds=4",
			"--server-address=",
		}},
		{name: componentStorage, binary: c.lab.opts.DroverBinary, args: []string{
			"lab", storageControllerVerb,
			"--cluster=" + c.Name,
			"--kubeconfig=" + kubeconfig,
			"--data-dir=" + c.storageDir(),
			"--peer-data-dir=" + c.peer().storageDir(),
			"--partition-flag=" + c.PartitionFlag(),
			"--peer-partition-flag=" + c.peer().PartitionFlag(),
			"--multicluster-network-flag=" + c.lab.MultiClusterFlag(),
		}},
		c.s3Component(),
		c.proxyComponent(),
	}
}

// droverComponents run drover on the cluster when the lab runs it: the lab kubelet, which runs
// the pods of the release manifests' Deployments.
func (c *Cluster) droverComponents() []component {
	if !c.lab.opts.RunDrover {
		return nil
	}
	return []component{c.kubeletComponent()}
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
	if err := c.writeAdminKubeconfig(); err != nil {
		return err
	}
	return c.writeKubeconfig(c.controllerManagerKubeconfigPath(), controllerManagerUser)
}

// start brings the cluster's processes up, in order, waiting for each to be ready. What is
// already running is stopped first so a half-started cluster comes back whole; etcd's data is
// kept, so the cluster returns with all its objects.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.stop(); err != nil {
		return err
	}
	if err := c.prepareFiles(); err != nil {
		return err
	}
	if c.lab.opts.Audit {
		if err := c.enableAudit(); err != nil {
			return err
		}
	}
	ports := map[int]string{
		c.Ports.Etcd: c.Name + " etcd", c.Ports.EtcdPeer: c.Name + " etcd peer", c.Ports.APIServer: c.Name + " kube-apiserver",
	}
	var s3Profile S3Profile
	if c.Role == RoleManaged {
		ports[c.Ports.S3] = c.Name + " S3 server"
		ports[c.Ports.APIProxy] = c.Name + " API proxy"
		ports[c.Ports.S3Proxy] = c.Name + " S3 proxy"
		var err error
		if s3Profile, err = c.ensureS3Profile(); err != nil {
			return err
		}
		// The server is checked on its own address: its proxy starts after it.
		s3Profile.Endpoint = c.s3DirectEndpoint()
	}
	for port, user := range ports {
		if err := checkPortFree(port, user); err != nil {
			return err
		}
	}
	comps := c.components()
	for _, comp := range comps {
		began := time.Now()
		if comp.name == componentS3 {
			comp.env = s3Profile.env()
		}
		pid, err := comp.start(c.logDir(), c.lab.opts.TieToParent)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		switch comp.name {
		case componentEtcd:
			err = c.waitReady(ctx, comp, pid, c.etcdHealthy)
		case componentAPIServer:
			err = c.waitReady(ctx, comp, pid, c.apiServerReady)
			if err == nil {
				c.lab.progress("%s: kube-apiserver ready at %s (%.1f s)", c.Name, c.Endpoint(), time.Since(began).Seconds())
				err = c.bootstrap(ctx)
			}
		case componentS3:
			if err = c.waitReady(ctx, comp, pid, s3Profile.s3Ready); err == nil {
				err = s3Profile.ensureBucket(ctx)
			}
		case componentProxy:
			// Clients use the proxies' addresses (the DRCluster's kubeconfig, S3Endpoint): a
			// started cluster is one they reach, or, partitioned, one they are refused by.
			_, flagErr := os.Stat(c.PartitionFlag())
			err = c.awaitProxies(errors.Is(flagErr, os.ErrNotExist))
		}
		if err != nil {
			return err
		}
	}
	if c.Role == RoleManaged {
		if err := c.waitNodesReady(ctx); err != nil {
			return err
		}
	}
	return c.checkStarted(comps)
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

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	body, err := httpGet(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", c.Ports.Etcd))
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"health":"true"`) {
		return fmt.Errorf("etcd reports %s", body)
	}
	return nil
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	client, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	_, err = httpGet(ctx, client, c.Endpoint()+"/readyz")
	return err
}

// adminHTTPClient is an HTTP client that trusts the cluster's CA and authenticates as admin.
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, fmt.Errorf("failed to load admin client certificate of %s: %w", c.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("lab CA is not valid PEM")
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12,
		}},
	}, nil
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

func (c *Cluster) writeAdminKubeconfig() error {
	return c.writeKubeconfig(c.KubeconfigPath(), "lab-admin")
}

// controllerManagerUser is kube-controller-manager's user, as kubeadm names it. The lab runs it
// without per-controller ServiceAccounts (--use-service-account-credentials=false), so every
// controller, the Job controller included, sends its requests as this user.
const controllerManagerUser = "system:kube-controller-manager"

// controllerManagerKubeconfigPath is kube-controller-manager's kubeconfig.
func (c *Cluster) controllerManagerKubeconfigPath() string {
	return filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
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
