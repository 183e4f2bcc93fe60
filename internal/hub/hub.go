// Package hub wires drover's hub: the scheme, the cluster gateway and the DRCluster, DRPolicy,
// DRPlacementControl and DRDrill reconcilers, in one controller-runtime manager. `drover hub` runs it;
// tests run the same manager in-process against the lab's hub.
package hub

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/hub/drcluster"
	"github.com/drover-io/drover/internal/hub/drill"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/hub/drpolicy"
	"github.com/drover-io/drover/internal/metrics"
	"github.com/drover-io/drover/internal/tenancy"
)

// Options configure the hub.
type Options struct {
	// MetricsBindAddress is the metrics endpoint's address; "0" disables it.
	MetricsBindAddress string
	// MetricsInsecure serves the metrics over plain HTTP to anyone. By default they are served
	// over HTTPS to clients whose token may get the nonResourceURL /metrics (a TokenReview and a
	// SubjectAccessReview per request: the ClusterRole drover-metrics-reader).
	MetricsInsecure bool
	// ProbeInterval is how often each DRCluster is probed; default 5s.
	ProbeInterval time.Duration
	// UnreachableAfter is how long a cluster's probe must fail before Reachable turns False;
	// default 15s.
	UnreachableAfter time.Duration
	// InProcess is set when several hubs run in one process one after the other, as in tests.
	InProcess bool
	// LeaderElection makes one replica at a time reconcile.
	LeaderElection bool
	// LeaderElectionNamespace holds the leader election's Lease: the hub's namespace.
	LeaderElectionNamespace string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" or empty disables them.
	HealthProbeBindAddress string
	// ClusterLimits are the client-side rate limits of each managed cluster's client; zero
	// fields take gateway.DefaultQPS and gateway.DefaultBurst.
	ClusterLimits gateway.Limits
	// DRPCWorkers is how many DRPlacementControls are reconciled at once; zero takes
	// drpc.DefaultWorkers.
	DRPCWorkers int
	// TokenRenewAfter is the fraction of the life of an expiring token (the one `drover
	// cluster join` issues) after which the hub renews it; zero takes
	// gateway.DefaultTokenRenewAfter (0.8).
	TokenRenewAfter float64
	// ClusterTransport, when set, wraps the transport of every managed cluster's client (tests).
	ClusterTransport transport.WrapperFunc
	// Tenancy are the admin namespaces (whose DRPlacementControls may protect other namespaces)
	// and the system namespaces (never protected) besides the defaults of internal/tenancy.
	Tenancy tenancy.Rules
}

// LeaderElectionID names the hub's leader election Lease.
const LeaderElectionID = "drover-hub.drover.io"

// NewScheme returns the types the hub reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, ocmv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("failed to build the hub's scheme: %w", err)
		}
	}
	return s, nil
}

// The metrics endpoint authenticates and authorizes its clients (internal/metrics).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// withDefaults fills the options left zero and checks the others.
func (opts Options) withDefaults() (Options, error) {
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = 5 * time.Second
	}
	if opts.UnreachableAfter == 0 {
		opts.UnreachableAfter = 15 * time.Second
	}
	switch {
	case opts.ProbeInterval < 0 || opts.UnreachableAfter < 0:
		return opts, errors.New("the hub's probe interval and grace period must be positive")
	case opts.TokenRenewAfter < 0 || opts.TokenRenewAfter > 1:
		return opts, errors.New("the hub's token renewal fraction must be in (0, 1]: 0.8 renews a token after 80 % of its life")
	case opts.ClusterLimits.QPS < 0 || opts.ClusterLimits.Burst < 0 || opts.DRPCWorkers < 0:
		return opts, errors.New("the hub's cluster rate limits and DRPlacementControl workers must be positive")
	case opts.LeaderElection && opts.LeaderElectionNamespace == "":
		return opts, errors.New("leader election needs the hub's namespace: set --namespace or POD_NAMESPACE")
	}
	return opts, nil
}

// NewManager returns a manager running the hub's controllers against the hub cluster's cfg.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// Kubeconfig Secrets are read one by one, uncached: the hub neither lists nor watches
		// the Secrets of the hub cluster.
		Client:     client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Logger:     ctrl.Log.WithName("hub"),
		Metrics:    metrics.ServerOptions(opts.MetricsBindAddress, opts.MetricsInsecure),
		Controller: config.Controller{SkipNameValidation: &opts.InProcess},

		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// drover exits as soon as the manager stops, so the next leader need not wait out the
		// lease.
		LeaderElectionReleaseOnCancel: true,
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the hub's manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("failed to add the hub's health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("failed to add the hub's readiness check: %w", err)
	}
	gw := gateway.NewSecrets(mgr.GetAPIReader(), scheme, opts.ClusterLimits, opts.LeaderElectionNamespace)
	gw.WrapTransport = opts.ClusterTransport
	// The hub renews the tokens of the kubeconfig Secrets it reads (drover-system, its own
	// namespace): config/rbac/hub/kubeconfig_role.yaml lets it patch Secrets there.
	gw.SecretWriter, gw.TokenRenewAfter = mgr.GetClient(), opts.TokenRenewAfter
	if err := mgr.Add(gw); err != nil {
		return nil, fmt.Errorf("failed to add the cluster gateway: %w", err)
	}
	recorder := mgr.GetEventRecorder("drover-hub")
	if err := (&drcluster.Reconciler{
		Client: mgr.GetClient(), Gateway: gw, Health: &gateway.Health{}, Recorder: recorder,
		ProbeInterval: opts.ProbeInterval, UnreachableAfter: opts.UnreachableAfter,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the DRCluster controller: %w", err)
	}
	if err := (&drpolicy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the DRPolicy controller: %w", err)
	}
	drpcMetrics := drpc.NewMetrics(mgr.GetClient())
	if err := (&drpc.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Gateway: gw, Recorder: recorder, Metrics: drpcMetrics,
		Workers: opts.DRPCWorkers, Tenancy: opts.Tenancy,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the DRPlacementControl controller: %w", err)
	}
	if err := (&drill.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Gateway: gw, Recorder: recorder,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the DRDrill controller: %w", err)
	}
	if err := metrics.Register(mgr, drpcMetrics, drcluster.NewMetrics(mgr.GetClient()), drill.NewMetrics(mgr.GetClient())); err != nil {
		return nil, fmt.Errorf("failed to add the hub's metrics: %w", err)
	}
	return mgr, nil
}
