// Package agent wires drover's managed-cluster agent: the scheme, the replication backends and
// the VolumeReplicationGroup reconciler, in one controller-runtime manager. `drover agent` runs
// it; tests run the same manager in-process against a lab cluster.
package agent

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// Options configure the agent.
type Options struct {
	// ClusterName names the managed cluster in logs.
	ClusterName string
	// MetricsBindAddress is the metrics endpoint's address; "0" disables it.
	MetricsBindAddress string
	// NewStore builds S3 stores; nil means vrg.NewS3Store.
	NewStore vrg.StoreFactory
	// InProcess is set when several agents (of different clusters) or successive agents run in
	// one process, as in tests: controller-runtime otherwise refuses a second controller of
	// the same name, since both would report the same metrics.
	InProcess bool
}

// NewScheme returns the types the agent reads and writes: client-go's, drover's and csi-addons
// replication.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("failed to build the agent's scheme: %w", err)
		}
	}
	return s, nil
}

// NewManager returns a manager running the agent's controllers against cfg. Start it to run.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	if opts.ClusterName == "" {
		return nil, errors.New("the agent needs the name of its cluster")
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	if opts.NewStore == nil {
		opts.NewStore = vrg.NewS3Store
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Logger:     ctrl.Log.WithName("agent").WithValues("cluster", opts.ClusterName),
		Metrics:    metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		Controller: config.Controller{SkipNameValidation: &opts.InProcess},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the agent's manager: %w", err)
	}
	// Backends are registered here, explicitly; VolSync joins when it is built.
	backends, err := replication.NewRegistry(volrep.New(mgr.GetClient()))
	if err != nil {
		return nil, err
	}
	r := &vrg.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Backends: backends, NewStore: opts.NewStore,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the VolumeReplicationGroup controller: %w", err)
	}
	return mgr, nil
}
