package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/agent"
)

type agentFlags struct {
	kubeconfig         string
	clusterName        string
	metricsBindAddress string
	webhookAddress     string
	webhookCertDir     string
}

// newAgentCommand runs the agent of one managed cluster.
func newAgentCommand() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the agent of a managed cluster: reconciles VolumeReplicationGroups",
		Long: `The agent runs on every managed cluster. It protects the PVCs of each VolumeReplicationGroup:
marks them protected, retains their PVs, replicates them with the backend their StorageClass
selects and writes their PV/PVC metadata to every S3 profile of the group.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the managed cluster (default: $KUBECONFIG, else in-cluster)")
	cmd.Flags().StringVar(&f.clusterName, "cluster-name", "", "name of the managed cluster, for logs")
	cmd.Flags().StringVar(&f.metricsBindAddress, "metrics-bind-address", "0", `metrics endpoint address; "0" disables it`)
	cmd.Flags().StringVar(&f.webhookAddress, "webhook-address", "127.0.0.1:0",
		"host:port where the fence (the admission webhook that guards a relocation's demotion) listens; port 0 picks a free one")
	cmd.Flags().StringVar(&f.webhookCertDir, "webhook-cert-dir", "",
		"directory with the fence's tls.crt, tls.key and ca.crt (default: a self-signed certificate for 127.0.0.1)")
	_ = cmd.MarkFlagRequired("cluster-name")
	return cmd
}

func (f *agentFlags) run(cmd *cobra.Command) error {
	ctrl.SetLogger(zap.New())
	var cfg *rest.Config
	var err error
	if f.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("failed to load the cluster's configuration: %w", err)
	}
	mgr, err := agent.NewManager(cfg, agent.Options{
		ClusterName: f.clusterName, MetricsBindAddress: f.metricsBindAddress,
		WebhookAddress: f.webhookAddress, WebhookCertDir: f.webhookCertDir,
	})
	if err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}
