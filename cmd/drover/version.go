package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/cluster"
)

func newVersionCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cluster.VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print drover's version, and the hub's and the agents' when the hub answers",
		Long: `Prints the version and commit this binary was built from and, unless --client, the Kubernetes
version of the hub cluster (kubectl's connection flags select it; an unreachable hub is said,
not an error), the version of drover's hub and that of the agent of each DRCluster.

The hub records its version in the status of each DRCluster (status.hubVersion), each agent in
the status of its VolumeReplicationGroups, which the DRPlacementControls summarise
(status.vrgs[].agentVersion): reading them needs only read rights on drover.io objects on the
hub. Several versions are listed while an upgrade is under way; a cluster whose agent no group
reports yet (no application protected there) is said to be unknown.`,
		Example: `  drover version
  drover version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cluster.Version(conn, cmd.OutOrStdout(), o)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "print the client's version alone, asking the hub nothing")
	outputFlag(cmd, &o.Output, "json, yaml or jsonpath=TEMPLATE (default: lines)")
	return cmd
}
