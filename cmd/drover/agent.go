package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/agent"
	"github.com/drover-io/drover/internal/agent/drill"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/webhook"
	"github.com/drover-io/drover/internal/kubeconfig"
)

// Environment variables the release manifests set on drover's pods.
const (
	// envPodNamespace is the pod's namespace (downward API): --namespace's default.
	envPodNamespace = "POD_NAMESPACE"
	// envClusterName is the managed cluster's name: --cluster-name's default.
	envClusterName = "DROVER_CLUSTER_NAME"
)

type agentFlags struct {
	kubeconfig         string
	clusterName        string
	systemNamespaces   []string
	adminNamespaces    []string
	jobControllers     []string
	metricsBindAddress string
	metricsSecure      bool
	probeBindAddress   string
	leaderElect        bool
	namespace          string

	webhookAddress       string
	webhookCertDir       string
	webhookConfiguration string
	webhookCertSecret    string
	webhookService       string

	workers      int
	kubeAPIQPS   float32
	kubeAPIBurst int

	storeLimits vrg.StoreLimits

	restoreQuota          map[string]string
	restoreDefaultRequest map[string]string

	drillQuota        map[string]string
	drillDNSNamespace string
	drillDNSPods      map[string]string
}

// newAgentCommand runs the agent of one managed cluster.
func newAgentCommand() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the agent of a managed cluster: reconciles VolumeReplicationGroups",
		Long: `The agent runs on every managed cluster. It protects the PVCs of each VolumeReplicationGroup:
marks them protected, retains their PVs, replicates them with the backend their StorageClass
selects and writes their PV/PVC metadata to every S3 profile of the group.

Installed from the release manifests it runs with --webhook-configuration=drover-fence,
--webhook-cert-secret=drover-fence-cert, --webhook-service=drover-fence and
--webhook-cert-dir (where that Secret is mounted): it then makes and renews the fence's
certificate itself and injects its CA. Without those flags (a development run outside a cluster) it
installs the fence's configuration itself with a self-signed certificate for --webhook-address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the managed cluster (default: $KUBECONFIG, else in-cluster)")
	fl.StringVar(&f.clusterName, "cluster-name", os.Getenv(envClusterName),
		"name of the managed cluster, as its DRCluster on the hub (default: $"+envClusterName+")")
	fl.StringVar(&f.metricsBindAddress, "metrics-bind-address", "0", `metrics endpoint address; "0" disables it`)
	fl.BoolVar(&f.metricsSecure, "metrics-secure", true,
		"serve the metrics over HTTPS to clients allowed to get /metrics (ClusterRole drover-metrics-reader); false serves plain HTTP to anyone")
	fl.StringVar(&f.probeBindAddress, "health-probe-bind-address", "0", `address of /healthz and /readyz; "0" disables them`)
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader among the agent's replicas (a Lease in --namespace)")
	fl.StringVar(&f.namespace, "namespace", os.Getenv(envPodNamespace),
		"namespace the agent runs in: its leader election Lease and the fence's Secret and Service (default: $"+envPodNamespace+")")
	fl.StringVar(&f.webhookAddress, "webhook-address", "127.0.0.1:0",
		"host:port where the fence (the admission webhook that guards a relocation's demotion) listens; port 0 picks a free one")
	fl.StringVar(&f.webhookCertDir, "webhook-cert-dir", "",
		"directory with the fence's tls.crt and tls.key (and ca.crt without --webhook-configuration) (default: a self-signed certificate for 127.0.0.1)")
	fl.StringVar(&f.webhookConfiguration, "webhook-configuration", "",
		"the fence's ValidatingWebhookConfiguration, installed by the release manifests; the agent then installs none")
	fl.StringVar(&f.webhookCertSecret, "webhook-cert-secret", "",
		"Secret in --namespace where the agent keeps the fence's CA and serving certificate, renewed before they expire (needs --webhook-configuration, --webhook-service, --webhook-cert-dir)")
	fl.StringVar(&f.webhookService, "webhook-service", "",
		"Service in --namespace through which the API server reaches the fence: the serving certificate's name")
	fl.StringSliceVar(&f.systemNamespaces, "system-namespaces", nil,
		"namespaces besides kube-*, openshift-* and drover-system that no VolumeReplicationGroup may protect")
	fl.StringSliceVar(&f.adminNamespaces, "admin-namespaces", nil,
		"namespaces besides drover-system (and those labelled drover.io/admin-namespace=true) whose VolumeReplicationGroups may protect other namespaces: the hub's --admin-namespaces")
	fl.StringSliceVar(&f.jobControllers, "job-controller-users", webhook.DefaultJobControllers,
		"users kube-controller-manager's Job controller creates pods as: the fence admits the VolSync mover pods of drover's own ReplicationDestinations and ReplicationSources only from them")
	fl.IntVar(&f.workers, "vrg-workers", agent.DefaultWorkers,
		"how many VolumeReplicationGroups are reconciled at once (0: the default)")
	fl.Float32Var(&f.kubeAPIQPS, "kube-api-qps", agent.DefaultKubeAPIQPS,
		"requests per second to the cluster's API server, per resource kind (client-side limit); negative disables the limit, 0 keeps the kubeconfig's")
	fl.IntVar(&f.kubeAPIBurst, "kube-api-burst", agent.DefaultKubeAPIBurst,
		"requests to the cluster's API server allowed in a burst above --kube-api-qps, per resource kind; 0 keeps the kubeconfig's")
	fl.Int64Var(&f.storeLimits.CaptureBytes, "s3-max-capture-bytes", vrg.DefaultMaxCaptureBytes,
		"the largest capture of Kubernetes objects read from an S3 store; a larger one is refused before it is read")
	fl.Int64Var(&f.storeLimits.MetadataBytes, "s3-max-object-bytes", vrg.DefaultMaxMetadataBytes,
		"the largest other object (a PV's or PVC's metadata, a primary marker) read from an S3 store")
	fl.IntVar(&f.storeLimits.Keys, "s3-max-keys", vrg.DefaultMaxKeys,
		"the most keys a listing of one group's objects in an S3 store may return; more is refused")
	fl.StringToStringVar(&f.restoreQuota, "restore-quota", nil,
		"the hard limits of the ResourceQuota drover-floor that every namespace a failover or relocation restores into gets before anything is restored there, whatever the capture holds, resource=quantity (empty: none)")
	fl.StringToStringVar(&f.restoreDefaultRequest, "restore-default-request", nil,
		"what a container that requests nothing requests in those namespaces (LimitRange drover-floor), resource=quantity, so that a --restore-quota of requests admits its pod (empty: none)")
	fl.StringToStringVar(&f.drillQuota, "drill-sandbox-quota", quotaFlag(drill.DefaultQuota),
		"the hard limits of the ResourceQuota of each DR drill's sandbox namespace, resource=quantity (a resource left out is not limited; empty: the default)")
	fl.StringVar(&f.drillDNSNamespace, "drill-dns-namespace", drill.DefaultDNS.Namespace,
		"namespace of the cluster's DNS pods, the one destination outside a DR drill's sandbox its pods may reach (port 53)")
	fl.StringToStringVar(&f.drillDNSPods, "drill-dns-pod-labels", drill.DefaultDNS.PodLabels,
		"labels of the cluster's DNS pods in --drill-dns-namespace")
	return cmd
}

// quotaFlag writes a ResourceList as --drill-sandbox-quota's value.
func quotaFlag(l corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}

// parseResources parses a flag of resource=quantity pairs.
func parseResources(flag string, values map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, v := range values {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %s=%s: not a quantity: %w", flag, name, v, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// parseDrillQuota parses --drill-sandbox-quota; empty, the agent's default.
func (f *agentFlags) parseDrillQuota() (corev1.ResourceList, error) {
	return parseResources("drill-sandbox-quota", f.drillQuota)
}

// parseRestoreFloor parses --restore-quota and --restore-default-request.
func (f *agentFlags) parseRestoreFloor() (vrg.NamespaceFloor, error) {
	quota, err := parseResources("restore-quota", f.restoreQuota)
	if err != nil {
		return vrg.NamespaceFloor{}, err
	}
	requests, err := parseResources("restore-default-request", f.restoreDefaultRequest)
	if err != nil {
		return vrg.NamespaceFloor{}, err
	}
	return vrg.NamespaceFloor{Quota: quota, DefaultRequest: requests}, nil
}

// options checks the flags and turns them into the agent's options.
func (f *agentFlags) options() (agent.Options, error) {
	opts := agent.Options{
		ClusterName: f.clusterName, MetricsBindAddress: f.metricsBindAddress, MetricsInsecure: !f.metricsSecure,
		HealthProbeBindAddress: f.probeBindAddress,
		LeaderElection:         f.leaderElect, LeaderElectionNamespace: f.namespace,
		WebhookAddress: f.webhookAddress, WebhookCertDir: f.webhookCertDir,
		WebhookConfiguration: f.webhookConfiguration,
		Workers:              f.workers, KubeAPIQPS: f.kubeAPIQPS, KubeAPIBurst: f.kubeAPIBurst,
		SystemNamespaces: f.systemNamespaces, AdminNamespaces: f.adminNamespaces, JobControllers: f.jobControllers,
		StoreLimits: f.storeLimits,
	}
	if f.clusterName == "" {
		return opts, errors.New("the agent needs its cluster's name: set --cluster-name or " + envClusterName)
	}
	quota, err := f.parseDrillQuota()
	if err != nil {
		return opts, err
	}
	if opts.RestoreFloor, err = f.parseRestoreFloor(); err != nil {
		return opts, err
	}
	if (f.drillDNSNamespace == "") != (len(f.drillDNSPods) == 0) {
		return opts, errors.New("--drill-dns-namespace and --drill-dns-pod-labels name the cluster's DNS pods together: set both")
	}
	opts.DrillDNS = drill.DNSPeer{Namespace: f.drillDNSNamespace, PodLabels: f.drillDNSPods}
	if len(quota) > 0 {
		opts.DrillQuota = quota
	}
	if f.storeLimits.CaptureBytes < 0 || f.storeLimits.MetadataBytes < 0 || f.storeLimits.Keys < 0 {
		return opts, errors.New("--s3-max-capture-bytes, --s3-max-object-bytes and --s3-max-keys must not be negative (0 is the default)")
	}
	if f.workers < 0 || f.kubeAPIBurst < 0 {
		return opts, fmt.Errorf("--vrg-workers (%d) and --kube-api-burst (%d) must not be negative", f.workers, f.kubeAPIBurst)
	}
	if f.webhookCertSecret == "" {
		return opts, nil
	}
	switch {
	case f.namespace == "":
		return opts, errors.New("--webhook-cert-secret needs the agent's namespace: set --namespace or " + envPodNamespace)
	case f.webhookService == "" || f.webhookConfiguration == "" || f.webhookCertDir == "":
		return opts, errors.New("--webhook-cert-secret needs --webhook-service, --webhook-configuration and --webhook-cert-dir")
	}
	opts.WebhookCertRotation = &webhook.CertRotation{
		Secret:  types.NamespacedName{Namespace: f.namespace, Name: f.webhookCertSecret},
		DNSName: fmt.Sprintf("%s.%s.svc", f.webhookService, f.namespace),
	}
	return opts, nil
}

func (f *agentFlags) run(cmd *cobra.Command) error {
	ctrl.SetLogger(zap.New())
	opts, err := f.options()
	if err != nil {
		return err
	}
	var cfg *rest.Config
	if f.kubeconfig != "" {
		cfg, err = kubeconfig.FromFile(f.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("failed to load the cluster's configuration: %w", err)
	}
	if err := agent.Preflight(cmd.Context(), cfg); err != nil {
		return err
	}
	mgr, err := agent.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}
