package main

import (
	"errors"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/join"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Join managed clusters to the hub, remove them, declare them lost",
		// The clients log nothing a person needs; without a logger controller-runtime
		// complains on stderr.
		PersistentPreRun: func(*cobra.Command, []string) { ctrllog.SetLogger(logr.Discard()) },
	}
	cmd.AddCommand(newClusterJoinCommand(), newClusterUnjoinCommand(), newClusterLostCommand())
	return cmd
}

// clusterFlags are the flags join and unjoin share.
type clusterFlags struct {
	hubKubeconfig, hubContext         string
	clusterKubeconfig, clusterContext string
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.hubKubeconfig, "hub-kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().StringVar(&f.hubContext, "hub-context", "", "kubeconfig context of the hub cluster (default: the current context)")
	cmd.Flags().StringVar(&f.clusterKubeconfig, "cluster-kubeconfig", "", "kubeconfig of the managed cluster, with a cluster-admin user")
	cmd.Flags().StringVar(&f.clusterContext, "cluster-context", "", "kubeconfig context of the managed cluster (default: its current context)")
}

// load reads the kubeconfigs; the managed cluster's only when given.
func (f *clusterFlags) load() (hub, managed join.Cluster, err error) {
	if hub, err = join.LoadKubeconfig(f.hubKubeconfig, f.hubContext); err != nil {
		return hub, managed, err
	}
	if f.clusterKubeconfig == "" {
		return hub, managed, nil
	}
	managed, err = join.LoadKubeconfig(f.clusterKubeconfig, f.clusterContext)
	return hub, managed, err
}

func newClusterJoinCommand() *cobra.Command {
	f := &clusterFlags{}
	o := join.Options{}
	var credentialsFile string
	cmd := &cobra.Command{
		Use:   "join NAME --cluster-kubeconfig FILE --s3-endpoint URL --s3-bucket BUCKET",
		Short: "Register a managed cluster with the hub as the DRCluster NAME, with a least-privilege identity",
		Long: `Creates on the managed cluster the hub's identity (ServiceAccount drover-hub in drover-system,
bound to the role of config/rbac/hub-on-managed-cluster), a long-lived token for it and the
credentials Secret of the cluster's S3 profile; then on the hub a kubeconfig Secret with that
token and the DRCluster NAME. Checks both clusters first and writes nothing when a check fails;
a failed write deletes what the run created. Running it again changes nothing.

S3 credentials come from --s3-access-key-id/--s3-secret-access-key, else --s3-credentials-file,
else $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY.`,
		Example: `  drover cluster join east --cluster-kubeconfig east.kubeconfig \
    --s3-endpoint https://s3.east.example.com --s3-bucket drover-east --region eu-west
  drover cluster join east --cluster-kubeconfig east.kubeconfig ... --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.Hub, o.Managed, err = f.load(); err != nil {
				return err
			}
			if err := s3Credentials(&o, credentialsFile); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return join.Join(cmd.Context(), o)
		},
	}
	f.add(cmd)
	_ = cmd.MarkFlagRequired("cluster-kubeconfig")
	fs := cmd.Flags()
	fs.StringVar(&o.Server, "server", "", "the managed cluster's API address as the hub reaches it (default: the server of --cluster-kubeconfig)")
	fs.StringVar(&o.Region, "region", "", "the cluster's failure domain, DRCluster spec.region (default: NAME)")
	fs.StringVarP(&o.Namespace, "namespace", "n", join.DefaultNamespace, "namespace of what join creates, on both clusters")
	fs.StringVar(&o.S3.Name, "s3-profile", "", "name of the cluster's S3 profile and of its credentials Secret (default: s3-NAME)")
	fs.StringVar(&o.S3.Endpoint, "s3-endpoint", "", "URL of the cluster's S3 store, such as https://s3.example.com:9000")
	fs.StringVar(&o.S3.Bucket, "s3-bucket", "", "bucket of the cluster's S3 profile")
	fs.StringVar(&o.S3.Region, "s3-region", "", "region of the bucket (default: us-east-1)")
	fs.StringVar(&o.S3.AccessKeyID, "s3-access-key-id", "", "S3 access key ID")
	fs.StringVar(&o.S3.SecretAccessKey, "s3-secret-access-key", "", "S3 secret access key")
	fs.StringVar(&credentialsFile, "s3-credentials-file", "", "file with the S3 credentials: an AWS credentials file or AWS_ACCESS_KEY_ID=... lines")
	fs.BoolVar(&o.DryRun, "dry-run", false, "check both clusters and print the objects join would apply, as YAML, without changing anything")
	fs.DurationVar(&o.TokenTimeout, "token-timeout", join.DefaultTokenTimeout, "how long to wait for the managed cluster's token controller to issue the token")
	return cmd
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
			o.Out = cmd.OutOrStdout()
			return unjoinErr(runUnjoin(cmd, o, s))
		},
	}
	f.add(cmd)
	s.add(cmd, "check both clusters and print what unjoin would delete (the API servers' dry run), without changing anything",
		"do not ask for confirmation (required when stdin is not a terminal)")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", join.DefaultNamespace, "namespace where join created its objects, on both clusters")
	cmd.Flags().BoolVar(&o.Force, "force", false, "unjoin even while DRPolicies pair the cluster, or a DRCluster join did not create")
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
