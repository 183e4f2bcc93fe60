// Package agent wires drover's managed-cluster agent: the scheme, the replication backends, the
// VolumeReplicationGroup reconciler and the DrillSandbox reconciler of DR drills
// (internal/agent/drill), in one controller-runtime manager. `drover agent` runs
// it; tests run the same manager in-process against a lab cluster.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/drill"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/webhook"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/metrics"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
	"github.com/drover-io/drover/internal/replication/volsync"
	"github.com/drover-io/drover/internal/tenancy"
)

// Options configure the agent.
type Options struct {
	// ClusterName names the managed cluster in logs.
	ClusterName string
	// SystemNamespaces are namespaces, besides kube-*, openshift-* and drover-system, that no
	// VolumeReplicationGroup may protect.
	SystemNamespaces []string
	// AdminNamespaces are namespaces, besides drover-system and those labelled
	// drover.io/admin-namespace=true on the cluster, whose VolumeReplicationGroups may protect
	// other namespaces.
	AdminNamespaces []string
	// JobControllers are the users kube-controller-manager's Job controller creates pods as,
	// whose VolSync mover pods the fence admits (webhook.ClusterMovers); nil is
	// webhook.DefaultJobControllers.
	JobControllers []string
	// MetricsBindAddress is the metrics endpoint's address; "0" disables it.
	MetricsBindAddress string
	// MetricsInsecure serves the metrics over plain HTTP to anyone; by default HTTPS to clients
	// allowed to get /metrics (internal/metrics).
	MetricsInsecure bool
	// NewStore builds S3 stores; nil means vrg.NewS3Store, with the sealing's cost reported
	// among the agent's metrics.
	NewStore vrg.StoreFactory
	// InProcess is set when several agents (of different clusters) or successive agents run in
	// one process, as in tests: controller-runtime otherwise refuses a second controller of
	// the same name, since both would report the same metrics.
	InProcess bool

	// WebhookAddress is where the fence (internal/agent/webhook) listens, host:port; default
	// "127.0.0.1:0", a free port on the loopback, as in the lab where kube-apiserver and the
	// agent share 127.0.0.1.
	WebhookAddress string
	// WebhookCertDir holds the fence's serving certificate (tls.crt, tls.key, reloaded when
	// they rotate) and the CA that signed it (ca.crt). Empty makes a self-signed one for
	// 127.0.0.1.
	WebhookCertDir string
	// DisableFence runs the agent without the fence: a relocation's demotion then waits,
	// saying so (FenceNotAvailable).
	DisableFence bool
	// WebhookConfiguration names the fence's ValidatingWebhookConfiguration when the release
	// manifests install it (drover-fence): the agent then installs none, serves the certificate
	// in WebhookCertDir (which may fill later: a mounted Secret) and is ready once it is there.
	// Empty, the agent installs the configuration itself with the URL of its server (the lab).
	WebhookConfiguration string
	// WebhookCertRotation, with WebhookConfiguration, makes the agent manage the certificate:
	// it fills the Secret (mounted at WebhookCertDir) and injects the CA into the configuration.
	// Nil, someone else does (cert-manager and its CA injector).
	WebhookCertRotation *webhook.CertRotation

	// LeaderElection makes one replica at a time reconcile (the fence serves in every replica).
	LeaderElection bool
	// LeaderElectionNamespace holds the leader election's Lease: the agent's namespace.
	LeaderElectionNamespace string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" or empty disables them.
	HealthProbeBindAddress string

	// StoreLimits bound the objects and listings the agent reads from the S3 stores; the zero
	// value is vrg's defaults (64 MiB for a capture, 1 MiB for any other object, 10,000 keys).
	StoreLimits vrg.StoreLimits

	// RestoreFloor is the ResourceQuota and LimitRange drover-floor that every namespace a
	// failover or relocation restores into gets before anything is restored there, whatever
	// the capture holds; the zero value is none.
	RestoreFloor vrg.NamespaceFloor

	// DrillQuota is the hard limits of each drill sandbox namespace's ResourceQuota; nil is
	// drill.DefaultQuota.
	DrillQuota corev1.ResourceList
	// DrillDNS names the cluster's DNS pods, the one thing outside a drill its sandbox's pods may
	// reach; zero is drill.DefaultDNS.
	DrillDNS drill.DNSPeer

	// Workers is how many groups are reconciled at once; 0 means DefaultWorkers.
	Workers int
	// KubeAPIQPS and KubeAPIBurst bound the agent's requests to its API server (client-go's
	// token bucket, one per resource kind); 0 keeps what cfg says. A negative QPS disables the
	// client-side limit.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// VolSyncKeyRecheck is how often a VolSync key is compared with the group's stores; 0 is
	// vrg's default, a minute. Tests shorten it to see a replaced key travel sooner.
	VolSyncKeyRecheck time.Duration
}

// DefaultWorkers is how many groups the agent reconciles at once by default. A settled group's
// pass mostly waits on its stores and API server (marker reads, a capture's lists), so several
// workers keep every group's status within a second of its storage's syncs; measured in
// docs/design/agent.md ("The agent at scale"). Chosen against 4 and 32 (with the hub's workers
// the same) at 100 applications on the 2-core lab (a78cbb3, 2026-12-02; docs/benchmarks.md, "The
// measurements today's defaults rest on"): 4 left half the DRPCs out of Protected in the settle
// window and relocated slowest (264 s against 144-223 s); 32 ran three times the passes and took
// 130 s to recover against 55-79 s: the CPU, not the waits, sets the pace.
const DefaultWorkers = 8

// Default client rates of `drover agent` (--kube-api-qps, --kube-api-burst). A settled group
// patches its status once per sync of its storage, so 100 groups at a 5 s interval need 20
// status patches per second; the limit leaves room for a mass failover's creates.
const (
	DefaultKubeAPIQPS   = 100
	DefaultKubeAPIBurst = 200
)

// LeaderElectionID names the agent's leader election Lease.
const LeaderElectionID = "drover-agent.drover.io"

// NewScheme returns the types the agent reads and writes: client-go's, drover's, csi-addons
// replication, VolSync, VolumeSnapshot and the Multi-Cluster Services ServiceExport.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme,
		volsyncv1alpha1.AddToScheme, snapshotv1.AddToScheme, mcsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("failed to build the agent's scheme: %w", err)
		}
	}
	return s, nil
}

// The metrics endpoint authenticates and authorizes its clients (internal/metrics).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// complete checks the options and fills in their defaults.
func (opts *Options) complete() error {
	if opts.ClusterName == "" {
		return errors.New("the agent needs the name of its cluster")
	}
	if opts.LeaderElection && opts.LeaderElectionNamespace == "" {
		return errors.New("leader election needs the agent's namespace: set --namespace or POD_NAMESPACE")
	}
	if opts.Workers < 0 {
		return fmt.Errorf("the agent needs at least one worker, not %d", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	return nil
}

// NewManager returns a manager running the agent's controllers against cfg. Start it to run.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if opts.KubeAPIQPS != 0 {
		cfg.QPS = opts.KubeAPIQPS
	}
	if opts.KubeAPIBurst != 0 {
		cfg.Burst = opts.KubeAPIBurst
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The fence labels namespaces one by one, uncached; only the capture watches their
		// metadata (vrg.Reconciler.Cache).
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Namespace{}}}},
		// The cache holds every pod, PVC and PV and the capture's metadata of every Secret,
		// ConfigMap and the other default kinds of the cluster: without their managedFields,
		// which the agent never reads, it holds a fraction of the bytes.
		Cache:      cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Logger:     ctrl.Log.WithName("agent").WithValues("cluster", opts.ClusterName),
		Metrics:    metrics.ServerOptions(opts.MetricsBindAddress, opts.MetricsInsecure),
		Controller: config.Controller{SkipNameValidation: &opts.InProcess},

		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// drover exits as soon as the manager stops, so the next leader need not wait out the
		// lease.
		LeaderElectionReleaseOnCancel: true,
		HealthProbeBindAddress:        orDisabled(opts.HealthProbeBindAddress),
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the agent's manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("failed to add the agent's health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("failed to add the agent's readiness check: %w", err)
	}
	// Backends are registered here, explicitly.
	backends, err := replication.NewRegistry(volrep.New(mgr.GetClient()), volsync.New(mgr.GetClient(), mgr.GetAPIReader()))
	if err != nil {
		return nil, err
	}
	if !opts.DisableFence {
		if err := addFence(mgr, opts); err != nil {
			return nil, err
		}
	}
	vrgMetrics := vrg.NewMetrics(mgr.GetClient(), opts.ClusterName)
	sealMetrics := objectstore.NewSealMetrics(prometheus.Labels{"cluster": opts.ClusterName})
	if opts.NewStore == nil {
		opts.NewStore = vrg.S3StoreFactory(sealMetrics)
	}
	r := &vrg.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Backends: backends, NewStore: opts.NewStore,
		Fence: !opts.DisableFence, ClusterName: opts.ClusterName, Recorder: mgr.GetEventRecorder("drover-agent"), Metrics: vrgMetrics,
		Workers: opts.Workers, Tenancy: tenancy.Rules{SystemNamespaces: opts.SystemNamespaces, AdminNamespaces: opts.AdminNamespaces},
		StoreLimits: opts.StoreLimits, Floor: opts.RestoreFloor, VolSyncKeyRecheck: opts.VolSyncKeyRecheck,
		Hooks: &hooks.Runner{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Config: mgr.GetConfig()},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the VolumeReplicationGroup controller: %w", err)
	}
	drills := &drill.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), NewStore: opts.NewStore, StoreLimits: opts.StoreLimits,
		Tenancy: r.Tenancy, Quota: opts.DrillQuota, DNS: opts.DrillDNS}
	if err := drills.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the DrillSandbox controller: %w", err)
	}
	if err := metrics.Register(mgr, vrgMetrics, sealMetrics); err != nil {
		return nil, fmt.Errorf("failed to add the agent's metrics: %w", err)
	}
	return mgr, nil
}

// orDisabled maps an empty address to "0", controller-runtime's "do not serve".
func orDisabled(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

// addFence adds the fence's server to the manager and, once the manager starts, installs its
// ValidatingWebhookConfiguration (the server listens from NewServer on, so its URL is known).
// With WebhookConfiguration set, the release manifests installed it instead (addInstalledFence).
func addFence(mgr manager.Manager, opts Options) error {
	if opts.WebhookAddress == "" {
		opts.WebhookAddress = "127.0.0.1:0"
	}
	if opts.WebhookConfiguration != "" {
		return addInstalledFence(mgr, opts)
	}
	if opts.WebhookCertRotation != nil {
		return errors.New("the agent manages the fence's certificate only for the configuration the manifests install: set --webhook-configuration")
	}
	var getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	var caBundle []byte
	if opts.WebhookCertDir == "" {
		certs, err := webhook.NewSelfSigned("127.0.0.1")
		if err != nil {
			return err
		}
		getCertificate, caBundle = certs.GetCertificate, certs.CABundle
	} else {
		watcher, err := certwatcher.New(filepath.Join(opts.WebhookCertDir, webhook.CertFile), filepath.Join(opts.WebhookCertDir, webhook.KeyFile))
		if err != nil {
			return fmt.Errorf("failed to load the fence's serving certificate from %s: %w", opts.WebhookCertDir, err)
		}
		if err := mgr.Add(watcher); err != nil {
			return fmt.Errorf("failed to add the fence's certificate watcher: %w", err)
		}
		caFile := filepath.Join(opts.WebhookCertDir, webhook.CAFile)
		if caBundle, err = os.ReadFile(caFile); err != nil { //nolint:gosec // the operator's own flag names the directory
			return fmt.Errorf("failed to read the fence's CA %s: %w", caFile, err)
		}
		getCertificate = watcher.GetCertificate
	}
	srv, err := addFenceServer(mgr, opts, getCertificate)
	if err != nil {
		return err
	}
	install := webhook.Options{URL: srv.URL(), CABundle: caBundle}
	if err := mgr.Add(configurationInstaller{client: mgr.GetClient(), opts: install}); err != nil {
		return fmt.Errorf("failed to add the fence's configuration installer: %w", err)
	}
	return nil
}

// addInstalledFence serves the fence for the configuration the release manifests installed:
// the certificate in WebhookCertDir, filled by the agent's own rotator (WebhookCertRotation) or
// by cert-manager. The agent is ready once the certificate is in place and, with the rotator,
// its CA injected into the configuration.
func addInstalledFence(mgr manager.Manager, opts Options) error {
	if opts.WebhookCertDir == "" {
		return errors.New("the fence of an installed configuration needs the directory of its certificate: set --webhook-cert-dir")
	}
	if r := opts.WebhookCertRotation; r != nil {
		rotation := *r
		rotation.Configuration, rotation.CertDir = opts.WebhookConfiguration, opts.WebhookCertDir
		ready, err := webhook.AddCertRotator(mgr, rotation)
		if err != nil {
			return err
		}
		return serveInstalledFence(mgr, opts, ready)
	}
	// cert-manager: its Secret is mounted before the process starts.
	ready := make(chan struct{})
	close(ready)
	return serveInstalledFence(mgr, opts, ready)
}

func serveInstalledFence(mgr manager.Manager, opts Options, ready <-chan struct{}) error {
	files := webhook.NewCertFiles(opts.WebhookCertDir, ready)
	if err := mgr.Add(files); err != nil {
		return fmt.Errorf("failed to add the fence's certificate loader: %w", err)
	}
	if err := mgr.AddReadyzCheck("fence-certificate", webhook.ReadyCheck(ready)); err != nil {
		return fmt.Errorf("failed to add the fence's readiness check: %w", err)
	}
	_, err := addFenceServer(mgr, opts, files.GetCertificate)
	return err
}

// addFenceServer adds the fence's HTTPS server, serving the certificate getCertificate returns,
// to the manager.
func addFenceServer(mgr manager.Manager, opts Options, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*webhook.Server, error) {
	srv, err := webhook.NewServer(webhook.ServerOptions{
		Address:        opts.WebhookAddress,
		GetCertificate: getCertificate,
		Fences:         webhook.ClusterFences{Reader: mgr.GetAPIReader()},
		Movers:         webhook.ClusterMovers{Reader: mgr.GetAPIReader(), JobControllers: opts.JobControllers},
		Logger:         mgr.GetLogger().WithName("fence"),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(srv); err != nil {
		return nil, fmt.Errorf("failed to add the fence's server: %w", err)
	}
	return srv, nil
}

// retryInstall is the pause between attempts to install the fence's configuration.
const retryInstall = 2 * time.Second

// configurationInstaller applies the fence's configuration once the manager starts, then waits
// for the manager to stop. Every replica applies the same configuration, so it needs no leader.
type configurationInstaller struct {
	client client.Client
	opts   webhook.Options
}

// Start implements manager.Runnable.
func (c configurationInstaller) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fence")
	for {
		err := webhook.EnsureConfiguration(ctx, c.client, c.opts)
		if err == nil {
			log.Info("Installed the fence's configuration", "url", c.opts.URL)
			break
		}
		// Until it is installed, a relocation's probe finds no fence and waits.
		log.Error(err, "Failed to install the fence's configuration; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryInstall):
		}
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (configurationInstaller) NeedLeaderElection() bool { return false }
