//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/argocd"
	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/lab/crds/upstream"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/story"
)

type labFlags struct {
	dir    string
	binDir string
	// gitops and monitoring are set by `lab up --gitops` and `--monitoring`.
	gitops     string
	monitoring bool
	// audit is set by `lab up --audit` and `lab bench --audit`.
	audit bool
	// hubArgs and agentArgs are set by `lab up` and `lab bench` (--hub-arg, --agent-arg).
	hubArgs, agentArgs []string
	// upstreamCRDs is set by `lab up --upstream-crds[=DIR]` (upstreamCRDsDir).
	upstreamCRDs string
	// multiClusterNetwork is set by `lab up --multicluster-network`.
	multiClusterNetwork bool
}

// droverArgFlags registers --hub-arg and --agent-arg on a command that brings the lab up.
func (f *labFlags) droverArgFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.hubArgs, "hub-arg", nil, "a flag to add to the hub's Deployment, e.g. --drpc-workers=32 (repeatable; applied when the lab installs drover)")
	cmd.Flags().StringArrayVar(&f.agentArgs, "agent-arg", nil, "a flag to add to the agents' Deployment, e.g. --vrg-workers=32 (repeatable; applied when the lab installs drover)")
}

func newLabCommand() *cobra.Command {
	f := &labFlags{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A local lab of real Kubernetes control planes: a hub and the managed clusters east and west",
		Long: `The lab runs a hub and two managed clusters (east, west) on this machine: real etcd,
kube-apiserver, kube-controller-manager and kube-scheduler, fake nodes (kwok), lab storage
whose volumes are directories, and on each managed cluster an S3 server (versitygw). It installs
drover as a user does: the release manifests this binary embeds applied to each cluster with
server-side apply, east and west joined as "drover cluster join" does, and drover's pods (the
hub on the hub, an agent on east and west) run by a lab kubelet of each cluster with their
ServiceAccounts' credentials. The DRPolicies ` + lab.PolicyVolRep + ` (lab-block volumes, VolRep) and
` + lab.PolicyVolSync + ` (lab-file volumes, VolSync) are created, so an application can be protected
right away with a DRPlacementControl. No containers or VMs are needed. Build the binaries first
with "make tools".`,
	}
	defaultDir := os.Getenv(lab.DirEnv)
	if defaultDir == "" {
		defaultDir = lab.DefaultDir
	}
	cmd.PersistentFlags().StringVar(&f.dir, "dir", defaultDir, "lab state directory (default from $"+lab.DirEnv+")")
	cmd.PersistentFlags().StringVar(&f.binDir, "bin-dir", "", "directory of the control-plane binaries (default: the directory of this drover binary)")
	cmd.AddCommand(
		newLabUpCommand(f), newLabDownCommand(f), newLabStatusCommand(f),
		newLabStopCommand(f), newLabStartCommand(f), newLabKubeconfigCommand(f),
		newLabRecordsCommand(f), newLabAuditCommand(f), newLabBenchCommand(f), newLabSoakCommand(f), newLabStorageControllerCommand(), newLabKubeletCommand(), newLabWriterCommand(),
		newLabPartitionCommand(f), newLabHealCommand(f), newLabProxyCommand(),
	)
	return cmd
}

func (f *labFlags) open() (*lab.Lab, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("failed to find the drover binary: %w", err)
	}
	binDir := f.binDir
	if binDir == "" {
		binDir = filepath.Dir(self)
	}
	upstreamDir, err := upstreamCRDsDir(f.upstreamCRDs)
	if err != nil {
		return nil, err
	}
	return lab.New(lab.Options{Dir: f.dir, BinDir: binDir, DroverBinary: self, Progress: os.Stdout, RunDrover: true, GitOps: f.gitops,
		Monitoring: f.monitoring, Audit: f.audit, HubArgs: f.hubArgs, AgentArgs: f.agentArgs, UpstreamCRDs: upstreamDir,
		MultiClusterNetwork: f.multiClusterNetwork})
}

// upstreamCRDsFound is the value of --upstream-crds given without a directory.
const upstreamCRDsFound = "auto"

// upstreamCRDsDir is the directory of upstream CRDs the lab serves for the value of
// --upstream-crds: none given, $DROVER_LAB_UPSTREAM_CRDS (empty: the lab's own CRDs); the flag
// alone, where the tests find them (upstream.Dir); else the directory given.
func upstreamCRDsDir(flag string) (string, error) {
	switch flag {
	case "":
		return os.Getenv(crds.UpstreamEnv), nil
	case upstreamCRDsFound:
		dir, err := upstream.Dir()
		if err != nil {
			return "", fmt.Errorf("failed to find the upstream CRDs for --upstream-crds: %w", err)
		}
		return dir, nil
	default:
		return flag, nil
	}
}

// labSession is a lab brought up for a command that drives it (bench, soak, demo) and the
// story's view of it.
type labSession struct {
	lab   *lab.Lab
	env   story.Env
	wasUp bool
}

// session brings the lab up (what runs is left alone) and returns it with the story's view,
// whose lines go to out.
func (f *labFlags) session(ctx context.Context, out io.Writer) (*labSession, error) {
	l, err := f.open()
	if err != nil {
		return nil, err
	}
	wasUp, err := l.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to bring the lab up: %w; run `make tools` if binaries are missing", err)
	}
	env, err := story.LabEnv(l, out)
	if err != nil {
		return nil, err
	}
	return &labSession{lab: l, env: env, wasUp: wasUp}, nil
}

// end takes the lab down unless keep asks to leave it or it ran before the session began.
func (s *labSession) end(keep bool) error {
	if keep || s.wasUp {
		return nil
	}
	return s.lab.Down()
}

// writeFile writes what write writes to path.
func writeFile(path string, write func(io.Writer)) error {
	fh, err := os.Create(path) //nolint:gosec // the path the user named
	if err != nil {
		return err
	}
	write(fh)
	return fh.Close()
}

// printStatus prints the clusters and, below them, drover's processes and what the hub reports
// of the DRClusters and DRPolicies (nothing of those when the hub's API is down), and Argo CD's
// processes when the lab runs it.
func printStatus(cmd *cobra.Command, l *lab.Lab, verbose bool) error {
	st, err := l.Status(cmd.Context())
	if err != nil {
		return err
	}
	if err := lab.PrintStatus(cmd.OutOrStdout(), st, verbose); err != nil {
		return err
	}
	ds, err := l.DroverStatus(cmd.Context())
	if err != nil {
		return err
	}
	if err := lab.PrintDroverStatus(cmd.OutOrStdout(), ds); err != nil {
		return err
	}
	if url, ok := l.MonitoringURL(); ok {
		fmt.Fprintf(cmd.OutOrStdout(), "\nPrometheus: %s (drover's alerts: %s/alerts)\n", url, url)
	}
	as, ok, err := l.ArgoCDStatus()
	if err != nil || !ok {
		return err
	}
	return argocd.PrintStatus(cmd.OutOrStdout(), as)
}

const auditFlagUsage = "give every API server an audit log, for \"drover lab audit\" (from a fresh lab: a running one is not restarted)"

func newLabUpCommand(f *labFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab's clusters (idempotent)",
		Long: `Start the lab's clusters and drover's processes; what already runs is left alone.
With --gitops argocd it also runs a real Argo CD (built by "make tools-argocd") in placement
mode: its objects on the hub, a cluster Secret per managed cluster, the generator ConfigMap for
PlacementDecisions, and a local git repository with the demo application. With --monitoring
it also runs a real Prometheus (built by "make tools-monitoring") that scrapes the hub and the
agents with a token bound to drover-metrics-reader and evaluates drover's alert rules. With
--audit every API server keeps an audit log, which "drover lab audit" reads: who makes the
requests. With --upstream-crds the clusters serve the upstream projects' own CRDs verbatim
instead of the lab's CRDs of the same kinds, and the other kinds they define besides; the lab
keeps serving them at every start until "drover lab down". The flag alone takes them where the
tests find them, in order: $` + upstream.DirEnv + `, .cache/upstream-apis of the checkout around
the working directory (filled by "make upstream-apis", which downloads them at their pinned
commits), ../shared/upstream-apis beside it. --upstream-crds=DIR takes the CRDs in DIR, as
$` + crds.UpstreamEnv + `=DIR does for every lab command.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && f.upstreamCRDs == upstreamCRDsFound {
				return fmt.Errorf("--upstream-crds takes a directory after an equals sign: --upstream-crds=%s", args[0])
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			already, err := l.Up(cmd.Context())
			if err != nil {
				return fmt.Errorf("%w\nrun `drover lab down` to clean up what started", err)
			}
			if already {
				fmt.Fprintf(cmd.OutOrStdout(), "The lab in %s is already running\n", l.Dir())
			}
			return printStatus(cmd, l, false)
		},
	}
	cmd.Flags().StringVar(&f.gitops, "gitops", "", "also run a GitOps tool in placement mode: "+lab.GitOpsArgoCD)
	cmd.Flags().BoolVar(&f.monitoring, "monitoring", false, "also run a Prometheus (built by \"make tools-monitoring\") that scrapes drover's hub and agents and evaluates drover's alert rules")
	cmd.Flags().BoolVar(&f.audit, "audit", false, auditFlagUsage)
	cmd.Flags().StringVar(&f.upstreamCRDs, "upstream-crds", "", "serve the upstream projects' CRDs verbatim instead of the lab's: alone, those the tests find ($"+upstream.DirEnv+
		", .cache/upstream-apis, ../shared/upstream-apis); =DIR, those in DIR (default from $"+crds.UpstreamEnv+")")
	cmd.Flags().Lookup("upstream-crds").NoOptDefVal = upstreamCRDsFound
	cmd.Flags().BoolVar(&f.multiClusterNetwork, "multicluster-network", false, "join the managed clusters in a multi-cluster network, as a Multi-Cluster Services implementation would: ServiceExports are exported and clusterset addresses resolve (recorded: later starts keep it)")
	f.droverArgFlags(cmd)
	return cmd
}

func newLabDownCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every lab process and remove the lab's state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			began := time.Now()
			if err := l.Down(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "The lab in %s is down (%.1f s)\n", l.Dir(), time.Since(began).Seconds())
			return nil
		},
	}
}

func newLabStatusCommand(f *labFlags) *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each cluster's health, API endpoint and kubeconfig, drover's processes and its DRClusters and DRPolicies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			return printStatus(cmd, l, verbose)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every component's process and memory")
	return cmd
}

func newLabStopCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stop CLUSTER",
		Short: "Stop a whole cluster (control plane, storage, S3 and its drover process), as if it were lost",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			if err := l.Stop(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cluster %s is stopped; `drover lab start %s` brings it back\n", args[0], args[0])
			return nil
		},
	}
}

func newLabStartCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "start CLUSTER",
		Short: "Start a stopped cluster with all the objects it had",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			return l.Start(cmd.Context(), args[0])
		},
	}
}

func newLabKubeconfigCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig CLUSTER",
		Short: "Print the path of a cluster's administrator kubeconfig",
		Example: `  export KUBECONFIG=$(drover lab kubeconfig east)
  kubectl get nodes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			c, err := l.Cluster(args[0])
			if err != nil {
				return err
			}
			if _, err := os.Stat(c.KubeconfigPath()); err != nil {
				return fmt.Errorf("cluster %s has no kubeconfig yet: run `drover lab up`", c.Name)
			}
			fmt.Fprintln(cmd.OutOrStdout(), c.KubeconfigPath())
			return nil
		},
	}
}

// newLabStorageControllerCommand runs the lab storage of one cluster; the lab starts it.
func newLabStorageControllerCommand() *cobra.Command {
	var cluster, kubeconfigPath, dataDir, peerDataDir, partitionFlag, peerPartitionFlag, multiClusterFlag, copyFreeze string
	var copyPacing time.Duration
	cmd := &cobra.Command{
		Use:    "storage-controller",
		Short:  "Run the lab storage of one managed cluster (started by the lab)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New())
			freeze, err := driver.ParseCopyFreeze(copyFreeze)
			if err != nil {
				return fmt.Errorf("invalid --copy-freeze: %w", err)
			}
			if v := os.Getenv(driver.CopyPacingEnv); v != "" && !cmd.Flags().Changed("copy-pacing") {
				if copyPacing, err = time.ParseDuration(v); err != nil {
					return fmt.Errorf("invalid $%s: %w", driver.CopyPacingEnv, err)
				}
			}
			cfg, err := kubeconfig.FromFile(kubeconfigPath)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %s: %w", kubeconfigPath, err)
			}
			cfg.QPS, cfg.Burst = 1000, 2000
			// Named in the API servers' audit logs apart from drover's other processes.
			cfg = rest.AddUserAgent(cfg, "lab-storage")
			return storage.Run(cmd.Context(), cfg, storage.Options{
				Cluster: cluster, DataDir: dataDir, PeerDataDir: peerDataDir, Drivers: []string{lab.BlockDriver, lab.FileDriver},
				PartitionFlags: nonEmpty(partitionFlag, peerPartitionFlag), MultiClusterFlag: multiClusterFlag,
				CopyFreeze: freeze, CopyPacing: copyPacing,
			})
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "lab cluster name")
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfigPath of the cluster")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the cluster's volumes")
	cmd.Flags().StringVar(&peerDataDir, "peer-data-dir", "", "directory of the peer cluster's volumes, the mirroring target")
	cmd.Flags().StringVar(&partitionFlag, "partition-flag", "", "file whose existence partitions this cluster from its peer")
	cmd.Flags().StringVar(&peerPartitionFlag, "peer-partition-flag", "", "file whose existence partitions the peer cluster from this one")
	cmd.Flags().StringVar(&multiClusterFlag, "multicluster-network-flag", "", "file whose existence joins this cluster and its peer in the multi-cluster network")
	cmd.Flags().StringVar(&copyFreeze, "copy-freeze", os.Getenv(driver.CopyFreezeEnv),
		fmt.Sprintf("what a copy of a volume stops while it runs: %q (every process using the volume) or %q; default $%s, else %[1]q",
			driver.CopyFreezeProcesses, driver.CopyFreezeNone, driver.CopyFreezeEnv))
	cmd.Flags().DurationVar(&copyPacing, "copy-pacing", 0,
		fmt.Sprintf("time slept before every file a copy of a volume copies, to make it take as long as a real volume's; default $%s", driver.CopyPacingEnv))
	for _, name := range []string{"cluster", "kubeconfig", "data-dir"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// newLabKubeletCommand runs the lab kubelet of one cluster (internal/lab/kubelet), which runs
// drover's pods.
func newLabKubeletCommand() *cobra.Command {
	var kubeconfigPath, stateDir, logDir, podCIDR, storageDir, certFile, keyFile, clientCAFile string
	var images, pins, storageDrivers, nodeDirs []string
	cmd := &cobra.Command{
		Use:    "kubelet",
		Short:  "Run the lab kubelet of one cluster (started by the lab)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kubeconfig.FromFile(kubeconfigPath)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %s: %w", kubeconfigPath, err)
			}
			opts := kubelet.Options{Config: rest.AddUserAgent(cfg, "lab-kubelet"), StateDir: stateDir, LogDir: logDir, Images: map[string]string{},
				StorageDir: storageDir, StorageDrivers: storageDrivers}
			if opts.PodCIDR, err = netip.ParsePrefix(podCIDR); err != nil {
				return fmt.Errorf("invalid --pod-cidr %q: %w", podCIDR, err)
			}
			for _, image := range images {
				name, bin, ok := strings.Cut(image, "=")
				if !ok {
					return fmt.Errorf("invalid --image %q: want IMAGE=BINARY", image)
				}
				opts.Images[name] = bin
			}
			if opts.PodIP, err = pinnedPodIPs(pins); err != nil {
				return err
			}
			for _, d := range nodeDirs {
				src, target, ok := strings.Cut(d, "=")
				if !ok || !filepath.IsAbs(src) || !filepath.IsAbs(target) {
					return fmt.Errorf("invalid --node-dir %q: want SOURCE=TARGET, both absolute paths", d)
				}
				opts.NodeDirs = append(opts.NodeDirs, kubelet.NodeDir{Source: src, Target: target})
			}
			if opts.Serving, err = kubeletServing(certFile, keyFile, clientCAFile); err != nil {
				return err
			}
			k, err := kubelet.New(opts)
			if err != nil {
				return err
			}
			return k.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the kubelet's identity")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "directory of the pods' files and state.json")
	cmd.Flags().StringVar(&logDir, "log-dir", "", "directory of the containers' logs")
	cmd.Flags().StringVar(&podCIDR, "pod-cidr", kubelet.DefaultPodCIDR.String(), "loopback range of pod IPs")
	cmd.Flags().StringArrayVar(&images, "image", nil, "IMAGE=BINARY: the binary that stands for an image (repeatable)")
	cmd.Flags().StringArrayVar(&pins, "pin-pod-ip", nil, "NAME=IP: the pod IP of pods labelled app.kubernetes.io/name=NAME (repeatable)")
	cmd.Flags().StringVar(&storageDir, "storage-dir", "", "data directory of the cluster's lab storage, whose volumes PVC volumes mount")
	cmd.Flags().StringArrayVar(&storageDrivers, "storage-driver", nil, "a CSI driver whose PVs are volumes of --storage-dir (repeatable)")
	cmd.Flags().StringArrayVar(&nodeDirs, "node-dir", nil, "SOURCE=TARGET: a directory of the machine bound read-write at TARGET in every container (repeatable)")
	cmd.Flags().StringVar(&certFile, "tls-cert-file", "", "serving certificate of the kubelet's HTTPS server, which serves the API server's pods/exec (none without it)")
	cmd.Flags().StringVar(&keyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	cmd.Flags().StringVar(&clientCAFile, "client-ca-file", "", "CA bundle the server checks its callers' client certificates against")
	for _, name := range []string{"kubeconfig", "state-dir", "log-dir", "image"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// kubeletServing loads the lab kubelet's server certificate and client CA; none when certFile is
// empty.
func kubeletServing(certFile, keyFile, clientCAFile string) (*kubelet.Serving, error) {
	if certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("failed to load --tls-cert-file %s and --tls-private-key-file %s: %w", certFile, keyFile, err)
	}
	caPEM, err := os.ReadFile(clientCAFile) //nolint:gosec // the lab's own CA file
	if err != nil {
		return nil, fmt.Errorf("failed to read --client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", clientCAFile)
	}
	return &kubelet.Serving{Cert: cert, ClientCAs: pool}, nil
}

// pinnedPodIPs parses --pin-pod-ip values into the kubelet's PodIP proposal.
func pinnedPodIPs(pins []string) (func(*corev1.Pod) netip.Addr, error) {
	byName := map[string]netip.Addr{}
	for _, pin := range pins {
		name, ip, ok := strings.Cut(pin, "=")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil {
			return nil, fmt.Errorf("invalid --pin-pod-ip %q: want NAME=IP", pin)
		}
		byName[name] = addr
	}
	return func(p *corev1.Pod) netip.Addr { return byName[p.Labels["app.kubernetes.io/name"]] }, nil
}
