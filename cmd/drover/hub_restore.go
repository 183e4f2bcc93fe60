package main

import (
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/hubrestore"
	"github.com/drover-io/drover/internal/join"
)

// newHubRestoreCommand rebuilds a lost hub from the managed clusters (docs/decisions/0017, 0018).
func newHubRestoreCommand() *cobra.Command {
	conn := &cli.Connection{}
	s := &safetyFlags{}
	var clusters []string
	o := hubrestore.Options{}
	cmd := &cobra.Command{
		Use:   "restore --cluster-kubeconfig NAME=FILE [--cluster-kubeconfig NAME=FILE ...]",
		Short: "Rebuild a lost hub on a new, empty one from what the managed clusters hold",
		Long: `Rebuilds the hub's objects on a new hub cluster (drover's hub installed, nothing else) from the
managed clusters, read with a kubeconfig of yours for each: every VolumeReplicationGroup there
carries the hub's record of its DRPlacementControl, its DRPolicy and its DRClusters
(annotation drover.io/hub-record).

It joins each cluster as drover cluster join does (a new token for the hub; the Secret the old
hub's tokens are bound to is deleted first, which revokes them; the S3 profiles and their store
keys as the cluster holds them), then creates the DRPolicies (their schedule, backends and
profiles as the groups hold them) and the DRPlacementControls, each asking the action the groups
have made: the group asked primary is where the application runs. It writes no group: the hub
rebuilds each DRPlacementControl's status from its groups (a failover made with
drover failover --without-hub reads FailedOver on that cluster once the hub finishes it) and
replays no action.

A cluster that does not answer (lost with the hub) is given its DRCluster from the records,
declared lost (spec.lost, marked as the restore's declaration), with no kubeconfig: nothing is
written on it, its DRPolicies are Validated without it and its applications go on on the peer
(one failed over without the hub reads FailedOver there). The new hub holds no credential for
it, so once it answers, run the restore again: it joins the cluster and lifts the declaration
it made (a person's is kept), and the hub demotes the cluster's stale primaries. Objects that
exist on the hub are kept as they are, so running it again changes nothing else.`,
		Example: `  drover hub restore --kubeconfig new-hub.kubeconfig \
    --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig --dry-run
  drover hub restore --kubeconfig new-hub.kubeconfig --cluster-kubeconfig west=west.kubeconfig --yes`,
		Args:             cobra.NoArgs,
		PersistentPreRun: func(*cobra.Command, []string) { ctrllog.SetLogger(logr.Discard()) },
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := conn.Resolve()
			if err != nil {
				return cli.Usage(err)
			}
			o.Hub = join.Cluster{Config: cfg, Source: conn.Describe()}
			o.Clusters, o.DryRun, o.Confirm = clusters, s.dryRun, s.confirmation(cmd)
			return hubrestore.Restore(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	conn.AddHubFlagsWithout(cmd.Flags(), "server")
	fs := cmd.Flags()
	fs.StringArrayVar(&clusters, "cluster-kubeconfig", nil, "NAME=FILE: your kubeconfig of the managed cluster NAME, whose user may create what drover cluster join creates (repeatable; one per managed cluster)")
	fs.StringToStringVar(&o.Servers, "cluster-server", nil, "NAME=URL: the managed cluster's API address as the hub reaches it, as drover cluster join --cluster-server (default: the server of its kubeconfig)")
	fs.BoolVar(&o.AllowInsecureKubeconfig, "allow-insecure-kubeconfig", false, "use kubeconfigs that set insecure-skip-tls-verify, as drover cluster join does")
	s.add(cmd, "read the clusters and print what would be created, changing nothing", "do not ask for confirmation (required when stdin is not a terminal)")
	return cmd
}
