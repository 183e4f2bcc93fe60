package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/join"
)

// The rotation is a cluster verb: it edits the S3 profiles' Secrets that `drover cluster join`
// copied onto every joined cluster and the hub, and reaches those clusters as join does.
func newClusterRotateStoreKeyCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := join.RotateOptions{}
	var retire string
	var clusters day2.ClusterKubeconfigs
	cmd := &cobra.Command{
		Use:   "rotate-store-key --profile NAME --cluster-kubeconfig CLUSTER=FILE ... [--retire KEYID]",
		Short: "Rotate the key that seals an S3 profile's store objects, on every joined cluster and the hub",
		Long: `Makes a new store key for the S3 profile NAME (32 random bytes, a new key ID) and adds it, not
yet current, to every copy of the profile's Secret that drover cluster join made: on each joined
cluster and on the hub. Only once every copy
holds it does it make it current everywhere, so no agent meets an object sealed with a key it
lacks. The older keys stay and open what they sealed; each group's primary rewrites its objects
under the new key at its first pass after its agent reads it.

A cluster that cannot be reached stops the rotation before the key is made current, and the
command exits non-zero: the copies already written hold the new key as a reader only, which is
harmless. Running it again finishes the same rotation.

--retire KEYID removes an older key from every copy. It refuses while KEYID is current anywhere.
It first reads every object of the profile's store (with the credentials of the hub's copy) and
reseals under the current key each one still sealed with KEYID, which would no longer open
otherwise; an object whose envelope names KEYID but does not open with it (written by someone
without the key) is listed, not trusted, and does not stop the retirement. It refuses when the
store cannot be read and written from here. --force skips the reseal.`,
		Example: `  drover cluster rotate-store-key --profile s3-east --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig
  drover cluster rotate-store-key --profile s3-east --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig --retire k3f9a2b1c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			retiring := cmd.Flags().Changed("retire")
			if o.Force && !retiring {
				return cli.Refused(errForceWithoutRetire)
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
			if retiring {
				return join.RetireStoreKey(cmd.Context(), o, retire)
			}
			return join.RotateStoreKey(cmd.Context(), o)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.Profile, "profile", "", "the S3 profile, the name of its credentials Secret (such as s3-east)")
	fs.StringVar(&o.Namespace, "drover-namespace", join.DefaultNamespace, "namespace of the profile's Secrets, on every cluster")
	fs.Var(&clusters, "cluster-kubeconfig", "CLUSTER=FILE: your kubeconfig of the joined cluster CLUSTER, whose copy of the profile's Secret is rewritten (repeatable; one per DRCluster)")
	fs.StringVar(&retire, "retire", "", "remove this older key from every copy, instead of rotating")
	fs.BoolVar(&o.Force, "force", false, "with --retire: do not reseal the store's objects still sealed with the key (those objects no longer open)")
	fs.BoolVar(&o.AllowInsecureKubeconfig, "allow-insecure-kubeconfig", false, "use a hub or cluster kubeconfig that sets insecure-skip-tls-verify (the store keys cross that connection)")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// errForceWithoutRetire refuses --force alone: a rotation has nothing to force.
var errForceWithoutRetire = errors.New("--force applies to --retire only: a rotation adds a key everywhere before making it current, and needs no forcing")
