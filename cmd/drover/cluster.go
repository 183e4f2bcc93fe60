package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/join"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Join managed clusters to the hub, list them, remove them, declare them lost, rotate store keys and S3 credentials",
		// The clients log nothing a person needs; without a logger controller-runtime
		// complains on stderr.
		PersistentPreRun: func(*cobra.Command, []string) { ctrllog.SetLogger(logr.Discard()) },
	}
	cmd.AddCommand(newClusterJoinCommand(), newClusterUnjoinCommand(), newClusterLostCommand(), newClusterListCommand(),
		newClusterRotateStoreKeyCommand(), newClusterRotateS3CredentialsCommand())
	return cmd
}

// clusterFlags are the flags join and unjoin share: the hub's connection as on every verb
// (kubectl's flags but --server, which names the managed cluster's address on join), the
// managed cluster's kubeconfig, and the namespace of drover's own objects.
type clusterFlags struct {
	hub                               cli.Connection
	clusterKubeconfig, clusterContext string
	namespace                         string
}

func (f *clusterFlags) add(cmd *cobra.Command, namespaceHelp string) {
	fs := cmd.Flags()
	f.hub.AddHubFlagsWithout(fs, "server")
	// The names before the hub's flags were kubectl's, kept so that scripts go on working.
	fs.StringVar(&f.hub.Kubeconfig, "hub-kubeconfig", "", "kubeconfig of the hub cluster")
	fs.StringVar(&f.hub.Context, "hub-context", "", "kubeconfig context of the hub cluster")
	_ = fs.MarkDeprecated("hub-kubeconfig", "use --kubeconfig, as on every verb")
	_ = fs.MarkDeprecated("hub-context", "use --context, as on every verb")
	fs.StringVar(&f.clusterKubeconfig, "cluster-kubeconfig", "", "kubeconfig of the managed cluster, with a cluster-admin user")
	fs.StringVar(&f.clusterContext, "cluster-context", "", "kubeconfig context of the managed cluster (default: its current context)")
	fs.StringVar(&f.namespace, "drover-namespace", join.DefaultNamespace, namespaceHelp)
	// -n names the applications' namespace on every other verb; here it was drover's own.
	fs.StringVarP(&f.namespace, "namespace", "n", join.DefaultNamespace, namespaceHelp)
	_ = fs.MarkDeprecated("namespace", "use --drover-namespace: -n names the applications' namespace on the other verbs")
}

// load reads the kubeconfigs; the managed cluster's only when given.
func (f *clusterFlags) load() (hub, managed join.Cluster, err error) {
	cfg, _, err := f.hub.Resolve()
	if err != nil {
		return hub, managed, err
	}
	hub = join.Cluster{Config: cfg, Source: f.hub.Describe()}
	if f.clusterKubeconfig == "" {
		return hub, managed, nil
	}
	managed, err = join.LoadKubeconfig(f.clusterKubeconfig, f.clusterContext)
	return hub, managed, err
}

func newClusterJoinCommand() *cobra.Command {
	f := &clusterFlags{}
	o := join.Options{}
	var credentialsFile, secretKeyFile, secretKeyOnArgv, deprecatedServer string
	var peers day2.ClusterKubeconfigs
	cmd := &cobra.Command{
		Use:   "join NAME --cluster-kubeconfig FILE --s3-endpoint URL --s3-bucket BUCKET [--peer-kubeconfig PEER=FILE ...]",
		Short: "Register a managed cluster with the hub as the DRCluster NAME, with a least-privilege identity",
		Long: `Creates on the managed cluster the hub's identity (ServiceAccount drover-hub in drover-system,
bound to the role of config/rbac/hub-on-managed-cluster), an expiring token for it that the hub renews, and the
credentials Secret of the cluster's S3 profile; then on the hub a kubeconfig Secret with that
token and the DRCluster NAME. Checks both clusters first and writes nothing when a check fails;
a failed write deletes what the run created. Running it again changes nothing.

Each cluster's agent writes to every S3 profile of its policy, so join copies the new profile's
credentials Secret onto every cluster joined before, and theirs onto NAME. It reaches each
cluster joined before with a kubeconfig of yours, --peer-kubeconfig PEER=FILE (repeatable; the
user must get, create and patch Secrets in drover-system there): the hub's credential on a
managed cluster has no right on Secrets. Join refuses, before writing anything, when a joined
cluster has none, naming it.

S3 credentials come from --s3-credentials-file, else --s3-access-key-id with
--s3-secret-access-key-file, else $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY. The secret key is
never taken from the command line, where the process list and the shell history show it.`,
		Example: `  drover cluster join east --cluster-kubeconfig east.kubeconfig \
    --s3-endpoint https://s3.east.example.com --s3-bucket drover-east --region eu-west
  drover cluster join west --cluster-kubeconfig west.kubeconfig --peer-kubeconfig east=east.kubeconfig \
    --s3-endpoint https://s3.west.example.com --s3-bucket drover-west --region eu-central
  drover cluster join east --cluster-kubeconfig east.kubeconfig ... --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if secretKeyOnArgv != "" {
				return errSecretKeyOnArgv
			}
			if o.Server == "" {
				o.Server = deprecatedServer
			}
			if err := joinOptions(&o, f, peers, credentialsFile, secretKeyFile); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return join.Join(cmd.Context(), o)
		},
	}
	f.add(cmd, "namespace of what join creates, on both clusters")
	_ = cmd.MarkFlagRequired("cluster-kubeconfig")
	fs := cmd.Flags()
	fs.StringVar(&o.Server, "cluster-server", "", "the managed cluster's API address as the hub reaches it (default: the server of --cluster-kubeconfig)")
	fs.StringVar(&deprecatedServer, "server", "", "the managed cluster's API address as the hub reaches it")
	_ = fs.MarkDeprecated("server", "use --cluster-server: --server names the hub's API server on the other verbs")
	fs.Var(&peers, "peer-kubeconfig", "PEER=FILE: your kubeconfig of the joined cluster PEER, onto which join copies the new S3 profile's Secret (repeatable; one per cluster joined before)")
	fs.StringVar(&o.Region, "region", "", "the cluster's failure domain, DRCluster spec.region (default: NAME)")
	fs.StringVar(&o.S3.Name, "s3-profile", "", "name of the cluster's S3 profile and of its credentials Secret (default: s3-NAME)")
	fs.StringVar(&o.S3.Endpoint, "s3-endpoint", "", "URL of the cluster's S3 store, such as https://s3.example.com:9000")
	fs.BoolVar(&o.S3.Insecure, "s3-insecure", false, "accept an http:// --s3-endpoint (requests and stored objects in clear): only for a store on a trusted network")
	fs.StringVar(&o.S3.Bucket, "s3-bucket", "", "bucket of the cluster's S3 profile")
	fs.StringVar(&o.S3.Region, "s3-region", "", "region of the bucket (default: us-east-1)")
	fs.StringVar(&o.S3.AccessKeyID, "s3-access-key-id", "", "S3 access key ID")
	fs.StringVar(&secretKeyFile, "s3-secret-access-key-file", "", "file whose content is the S3 secret access key (default: $AWS_SECRET_ACCESS_KEY)")
	// The flag stays, hidden, so that a script passing the key on the command line is refused
	// with what to use instead rather than with "unknown flag".
	fs.StringVar(&secretKeyOnArgv, "s3-secret-access-key", "", "refused: use --s3-secret-access-key-file, --s3-credentials-file or $AWS_SECRET_ACCESS_KEY")
	_ = fs.MarkHidden("s3-secret-access-key")
	fs.StringVar(&credentialsFile, "s3-credentials-file", "", "file with the S3 credentials: an AWS credentials file or AWS_ACCESS_KEY_ID=... lines")
	fs.BoolVar(&o.AllowInsecureKubeconfig, "allow-insecure-kubeconfig", false,
		"use a hub or managed kubeconfig that sets insecure-skip-tls-verify; the hub's kubeconfig then trusts the CA the managed cluster publishes")
	fs.BoolVar(&o.DryRun, "dry-run", false, "check both clusters and print the objects join would apply, as YAML, without changing anything")
	fs.DurationVar(&o.TokenTimeout, "token-timeout", join.DefaultTokenTimeout, "how long obtaining the hub's token (and the cluster's CA, when --cluster-kubeconfig names none) may take")
	fs.DurationVar(&o.TokenLifetime, "token-lifetime", join.DefaultTokenLifetime, "how long the hub's token is valid; the hub renews it after 80 % of that (drover hub --token-renew-after)")
	return cmd
}

// joinOptions completes join's options from its flags: the kubeconfigs of the hub, the cluster
// and its peers, and the S3 credentials.
func joinOptions(o *join.Options, f *clusterFlags, peers day2.ClusterKubeconfigs, credentialsFile, secretKeyFile string) error {
	if err := s3SecretKeyFromFile(o, secretKeyFile); err != nil {
		return err
	}
	var err error
	if o.Hub, o.Managed, err = f.load(); err != nil {
		return err
	}
	if o.Peers, err = join.LoadKubeconfigs(peers, join.PeerKubeconfigFlag); err != nil {
		return err
	}
	o.Namespace = f.namespace
	return s3Credentials(o, credentialsFile)
}

// errSecretKeyOnArgv refuses --s3-secret-access-key: an argument is visible to every user of the
// machine in the process list, and stays in the shell's history.
var errSecretKeyOnArgv = errors.New("--s3-secret-access-key puts the secret key where ps and the shell history show it: " +
	"write it to a file readable only by you and pass --s3-secret-access-key-file FILE, or pass --s3-credentials-file FILE, or set $AWS_SECRET_ACCESS_KEY")

// s3SecretKeyFromFile reads the secret access key from file, when one is named: its content
// without the trailing newline.
func s3SecretKeyFromFile(o *join.Options, file string) error {
	if file == "" {
		return nil
	}
	raw, err := os.ReadFile(file) //nolint:gosec // a file the user names
	if err != nil {
		return fmt.Errorf("failed to read the S3 secret access key file %s: %w", file, err)
	}
	key := strings.TrimRight(string(raw), "\r\n")
	if key == "" || strings.ContainsAny(key, "\r\n") {
		return fmt.Errorf("the S3 secret access key file %s must hold the key alone, on one line", file)
	}
	o.S3.SecretAccessKey = key
	return nil
}

// s3Credentials fills the S3 credentials the flags did not give from the file, else the
// environment.
func s3Credentials(o *join.Options, file string) error {
	if o.S3.AccessKeyID != "" && o.S3.SecretAccessKey != "" {
		return nil
	}
	if file != "" {
		id, secret, err := join.ReadS3Credentials(file)
		if err != nil {
			return err
		}
		o.S3.AccessKeyID, o.S3.SecretAccessKey = id, secret
		return nil
	}
	if o.S3.AccessKeyID == "" {
		o.S3.AccessKeyID = os.Getenv("AWS_ACCESS_KEY_ID")
	}
	if o.S3.SecretAccessKey == "" {
		o.S3.SecretAccessKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	return nil
}

func newClusterUnjoinCommand() *cobra.Command {
	f := &clusterFlags{}
	o := join.UnjoinOptions{}
	s := &safetyFlags{}
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove what drover cluster join created for NAME, on the hub and on the managed cluster",
		Long: `Deletes the DRCluster NAME and its Secrets on the hub and, with --cluster-kubeconfig, the hub's
identity, its token and the S3 Secrets on the managed cluster. Without --cluster-kubeconfig (a
cluster lost for good) only the hub's side is removed and the commands to clean the cluster
later are printed. Refuses while a DRPolicy pairs the cluster, unless --force.

On a terminal it first prints what it would delete (as --dry-run does) and asks to type NAME
to confirm; -y/--yes skips the question, and is required when stdin is not a terminal.`,
		Example: `  drover cluster unjoin east --cluster-kubeconfig east.kubeconfig --dry-run
  drover cluster unjoin east --cluster-kubeconfig east.kubeconfig
  drover cluster unjoin east --force --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.Hub, o.Managed, err = f.load(); err != nil {
				return err
			}
			o.Out, o.Namespace = cmd.OutOrStdout(), f.namespace
			return unjoinErr(runUnjoin(cmd, o, s))
		},
	}
	f.add(cmd, "namespace where join created its objects, on both clusters")
	s.add(cmd, "check both clusters and print what unjoin would delete (the API servers' dry run), without changing anything",
		"do not ask for confirmation (required when stdin is not a terminal)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "unjoin even while DRPolicies pair the cluster, or a DRCluster join did not create")
	cmd.ValidArgsFunction = completeFirstArg(&f.hub, cli.KindCluster)
	return cmd
}

// runUnjoin unjoins after confirmation: without --yes it runs a dry run first, so that the
// person confirms what they read, then asks to type the cluster's name.
func runUnjoin(cmd *cobra.Command, o join.UnjoinOptions, s *safetyFlags) error {
	if s.dryRun || s.yes {
		o.DryRun = s.dryRun
		return join.Unjoin(cmd.Context(), o)
	}
	dry := o
	dry.DryRun = true
	if err := join.Unjoin(cmd.Context(), dry); err != nil {
		return err
	}
	if err := s.confirmation(cmd).Confirm("unjoin cluster "+o.Name+", deleting what is listed above", o.Name); err != nil {
		return err
	}
	return join.Unjoin(cmd.Context(), o)
}

// unjoinErr gives an unjoin its checks refused the exit status of a refusal.
func unjoinErr(err error) error {
	var refused *join.RefusedError
	if errors.As(err, &refused) {
		return cli.Refused(err)
	}
	return err
}
