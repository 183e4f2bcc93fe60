package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/cluster"
)

func newClusterLostCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cluster.LostOptions{}
	cmd := &cobra.Command{
		Use:   "lost NAME --reason TEXT --yes",
		Short: "Declare the managed cluster NAME permanently lost, so that nothing waits for it",
		Long: `Sets spec.lost on the DRCluster NAME, with the reason given (kept in the DRCluster, its Fenced
condition and its ClusterDeclaredLost event; the API server's audit log records who set it).
From then on, deleting an application no longer waits for NAME (its group there is recorded in
the DRCluster's status.groupsToRemove), and no failover or relocation may target it. If NAME
answers again, the hub first demotes its groups whose application runs on the peer (never two
primaries), then removes the groups recorded. Fail applications running on NAME over first.

Prints what it means for each application of the policies pairing NAME and changes nothing
without --yes. --undo removes the declaration, once the cluster is back and clean.`,
		Example: `  drover cluster lost east --reason "data centre east flooded, hardware gone"
  drover cluster lost east --reason "data centre east flooded, hardware gone" --yes
  drover cluster lost east --undo --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Cluster = args[0]
			return runVerb(cmd, conn, &o, nil, cluster.DeclareLost)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.Reason, "reason", "", "why the cluster is lost, for the record (required to declare it)")
	fs.BoolVar(&o.Undo, "undo", false, "remove the declaration instead")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "confirm: without it, only print what would happen (and exit 0)")
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindCluster)
	return cmd
}
