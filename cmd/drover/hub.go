package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/hub"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/tenancy"
)

type hubFlags struct {
	kubeconfig         string
	metricsBindAddress string
	metricsSecure      bool
	probeBindAddress   string
	leaderElect        bool
	namespace          string
	probeInterval      time.Duration
	unreachableAfter   time.Duration
	clusterQPS         float32
	clusterBurst       int
	drpcWorkers        int
	tokenRenewAfter    float64
	tenancy            tenancy.Rules
}

// newHubCommand runs the hub.
func newHubCommand() *cobra.Command {
	f := &hubFlags{}
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the hub: reconciles DRClusters, DRPolicies and DRPlacementControls",
		Long: `The hub runs on the control cluster. It probes each DRCluster through the kubeconfig in its
Secret, validates DRPolicies, and drives each DRPlacementControl's VolumeReplicationGroups on
the managed clusters through deploy, failover and relocation. It never touches PVCs or storage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG, else in-cluster)")
	cmd.Flags().StringVar(&f.metricsBindAddress, "metrics-bind-address", "0", `metrics endpoint address; "0" disables it`)
	cmd.Flags().BoolVar(&f.metricsSecure, "metrics-secure", true,
		"serve the metrics over HTTPS to clients allowed to get /metrics (ClusterRole drover-metrics-reader); false serves plain HTTP to anyone")
	cmd.Flags().StringVar(&f.probeBindAddress, "health-probe-bind-address", "0", `address of /healthz and /readyz; "0" disables them`)
	cmd.Flags().BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader among the hub's replicas (a Lease in --namespace)")
	cmd.Flags().StringVar(&f.namespace, "namespace", os.Getenv(envPodNamespace),
		"namespace the hub runs in: its leader election Lease (default: $"+envPodNamespace+")")
	cmd.Flags().DurationVar(&f.probeInterval, "probe-interval", 5*time.Second, "how often each managed cluster is probed")
	cmd.Flags().DurationVar(&f.unreachableAfter, "unreachable-after", 15*time.Second,
		"how long a cluster's probe must fail before its DRCluster's Reachable condition turns False")
	cmd.Flags().Float32Var(&f.clusterQPS, "cluster-qps", gateway.DefaultQPS,
		"requests per second the hub may send to each managed cluster (its writes and probes; it reads the groups from a watch)")
	cmd.Flags().IntVar(&f.clusterBurst, "cluster-burst", gateway.DefaultBurst, "requests the hub may send to each managed cluster at once, above --cluster-qps")
	cmd.Flags().Float64Var(&f.tokenRenewAfter, "token-renew-after", gateway.DefaultTokenRenewAfter, "fraction of the life of a managed cluster's token (drover cluster join's) after which the hub renews it")
	cmd.Flags().IntVar(&f.drpcWorkers, "drpc-workers", drpc.DefaultWorkers, "DRPlacementControls reconciled at once")
	cmd.Flags().StringSliceVar(&f.tenancy.AdminNamespaces, "admin-namespaces", nil,
		"namespaces besides "+tenancy.DefaultAdminNamespace+" whose DRPlacementControls may protect other namespaces (label each drover.io/admin-namespace=true too, for the admission policy)")
	cmd.Flags().StringSliceVar(&f.tenancy.SystemNamespaces, "system-namespaces", nil,
		"namespaces besides kube-*, openshift-* and drover-system that no DRPlacementControl may protect")
	cmd.AddCommand(newHubRestoreCommand())
	return cmd
}

func (f *hubFlags) run(cmd *cobra.Command) error {
	ctrl.SetLogger(zap.New())
	var cfg *rest.Config
	var err error
	if f.kubeconfig != "" {
		cfg, err = kubeconfig.FromFile(f.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("failed to load the hub cluster's configuration: %w", err)
	}
	mgr, err := hub.NewManager(cfg, hub.Options{
		MetricsBindAddress: f.metricsBindAddress, MetricsInsecure: !f.metricsSecure, ProbeInterval: f.probeInterval, UnreachableAfter: f.unreachableAfter,
		HealthProbeBindAddress: f.probeBindAddress, LeaderElection: f.leaderElect, LeaderElectionNamespace: f.namespace,
		ClusterLimits: gateway.Limits{QPS: f.clusterQPS, Burst: f.clusterBurst}, DRPCWorkers: f.drpcWorkers,
		Tenancy: f.tenancy, TokenRenewAfter: f.tokenRenewAfter,
	})
	if err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}
