package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/join"
)

// newClusterRotateS3CredentialsCommand is a cluster verb beside rotate-store-key: it edits the
// same copies of an S3 profile's Secret, reached the same way.
func newClusterRotateS3CredentialsCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := join.S3CredentialOptions{}
	s := &safetyFlags{}
	var secretKeyFile, credentialsFile, secretKeyOnArgv string
	var clusters day2.ClusterKubeconfigs
	cmd := &cobra.Command{
		Use:   "rotate-s3-credentials --profile NAME --cluster-kubeconfig CLUSTER=FILE ...",
		Short: "Replace an S3 profile's access key in every copy of its Secret, on every joined cluster and the hub",
		Long: `Writes a new access key for the S3 profile NAME into every copy of the profile's Secret that
drover cluster join made: on each joined cluster, reached with a kubeconfig of yours for it
(--cluster-kubeconfig CLUSTER=FILE, one per DRCluster of the hub; the hub's credential there has
no right on Secrets), then on the hub. A DRCluster without a kubeconfig stops the command before
it writes anything. First create the new access key at the store, with access to the bucket, so
that both keys work for a while; this command lists the bucket with the new key and writes
nothing if the store refuses it, nor if a cluster's copy cannot be read (its agent would fail
once the old key is revoked). The agents read the new key at their next pass, without a
restart. Then revoke the old key at the store.

The new secret access key comes from --s3-secret-access-key-file, --s3-credentials-file or
$AWS_SECRET_ACCESS_KEY, never from the command line. On a terminal it first prints what it would
change (as --dry-run does) and asks to type NAME to confirm; -y/--yes skips the question, and is
required when stdin is not a terminal.`,
		Example: `  drover cluster rotate-s3-credentials --profile s3-east --s3-credentials-file new-east.credentials --dry-run \
    --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig
  drover cluster rotate-s3-credentials --profile s3-east --s3-access-key-id AKIA... --s3-secret-access-key-file new.key \
    --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if secretKeyOnArgv != "" {
				return cli.Usage(errSecretKeyOnArgv)
			}
			if err := newS3Credentials(&o, secretKeyFile, credentialsFile); err != nil {
				return cli.Usage(err)
			}
			cfg, _, err := conn.Resolve()
			if err != nil {
				return err
			}
			o.Hub = join.Cluster{Config: cfg, Source: conn.Describe()}
			if o.Clusters, err = join.LoadKubeconfigs(clusters, join.ClusterKubeconfigFlag); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return runRotateS3Credentials(cmd, o, s)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	s.add(cmd, "check every copy and the new key against the store, print what would change, and write nothing",
		"do not ask for confirmation (required when stdin is not a terminal)")
	fs := cmd.Flags()
	fs.StringVar(&o.Profile, "profile", "", "the S3 profile, the name of its credentials Secret (such as s3-east)")
	fs.StringVar(&o.Namespace, "drover-namespace", join.DefaultNamespace, "namespace of the profile's Secrets, on every cluster")
	fs.Var(&clusters, "cluster-kubeconfig", "CLUSTER=FILE: your kubeconfig of the joined cluster CLUSTER, whose copy of the profile's Secret is rewritten (repeatable; one per DRCluster)")
	fs.StringVar(&o.AccessKeyID, "s3-access-key-id", "", "the new S3 access key ID")
	fs.StringVar(&secretKeyFile, "s3-secret-access-key-file", "", "file whose content is the new S3 secret access key (default: $AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&secretKeyOnArgv, "s3-secret-access-key", "", "refused: use --s3-secret-access-key-file, --s3-credentials-file or $AWS_SECRET_ACCESS_KEY")
	_ = fs.MarkHidden("s3-secret-access-key")
	fs.StringVar(&credentialsFile, "s3-credentials-file", "", "file with the new S3 credentials: an AWS credentials file or AWS_ACCESS_KEY_ID=... lines")
	fs.BoolVar(&o.AllowInsecureKubeconfig, "allow-insecure-kubeconfig", false, "use a hub or cluster kubeconfig that sets insecure-skip-tls-verify (the credentials cross that connection)")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// newS3Credentials fills the new credentials from the file flags, else the environment.
func newS3Credentials(o *join.S3CredentialOptions, secretKeyFile, credentialsFile string) error {
	opts := join.Options{}
	opts.S3.AccessKeyID = o.AccessKeyID
	if err := s3SecretKeyFromFile(&opts, secretKeyFile); err != nil {
		return err
	}
	if err := s3Credentials(&opts, credentialsFile); err != nil {
		return err
	}
	o.AccessKeyID, o.SecretAccessKey = opts.S3.AccessKeyID, opts.S3.SecretAccessKey
	return nil
}

// runRotateS3Credentials rotates after confirmation: without --yes it runs a dry run first, so
// that the person confirms what they read, then asks to type the profile's name.
func runRotateS3Credentials(cmd *cobra.Command, o join.S3CredentialOptions, s *safetyFlags) error {
	if s.dryRun || s.yes {
		o.DryRun = s.dryRun
		return join.RotateS3Credentials(cmd.Context(), o)
	}
	dry := o
	dry.DryRun = true
	if err := join.RotateS3Credentials(cmd.Context(), dry); err != nil {
		return err
	}
	if err := s.confirmation(cmd).Confirm("write access key "+o.AccessKeyID+" into every copy listed above", o.Profile); err != nil {
		return err
	}
	return join.RotateS3Credentials(cmd.Context(), o)
}
