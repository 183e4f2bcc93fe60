package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

func newFailoverCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cli.ActionOptions{Action: v1alpha1.ActionFailover}
	cmd := &cobra.Command{
		Use:   "failover APP --to CLUSTER",
		Short: "Start an application on CLUSTER from the last replicated point, without its current cluster",
		Long: `Asks the hub to fail the application over to CLUSTER: its volumes are promoted there from
the last group sync (the writes made since are lost; see drover plan failover) and the old
primary is demoted the moment it is reachable again. Checks first that CLUSTER is in the
application's policy, reachable, and that no other action runs; warns when the peer is not
ready or the last sync is stale. With --wait, prints a line on every step until the
application is available on CLUSTER, and fails when the hub refuses the action, has not
taken it up within a minute (no hub runs), or the timeout passes.`,
		Example: `  drover plan failover db -n app --to west
  drover failover db -n app --to west --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runAction(cmd, args, conn, o) },
	}
	actionFlags(cmd, conn, &o)
	return cmd
}
