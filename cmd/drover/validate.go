package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
)

func newValidateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check that the clusters, or an application, are ready for disaster recovery",
		Long: `Runs checks and prints a table CHECK / RESULT / DETAIL, each result pass, warn or fail; each
detail says what was observed and what it is based on. Exits 1 when a check fails (a warning
does not), 6 when the hub does not answer.

The managed clusters are reached with the hub's own credential there (the kubeconfig in each
DRCluster's Secret, which you must be allowed to read), which may read only drover's groups;
--cluster-kubeconfig NAME=FILE uses a kubeconfig of yours for a cluster instead, so the checks
of its storage classes, agent and PVCs can be made.`,
	}
	cmd.AddCommand(newValidateClustersCommand(), newValidateApplicationCommand())
	return cmd
}

func newValidateClustersCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := day2.ValidateOptions{}
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "Check the hub and every managed cluster",
		Long: `Checks the hub and every DRCluster: that each API server answers and its clock agrees with
this machine's (its Date header), the CRDs drover and the policies' backends need, the hub's
view of each cluster (Validated, Reachable), drover's Deployments and their versions, the
StorageClasses the policies name with their VolumeReplicationClasses (VolRep) or
VolumeSnapshotClasses (VolSync), and each S3 profile: its Secret on the clusters and the
agents' reports of writing to the stores (the CLI holds no S3 credential and never reaches a
store itself).`,
		Example: `  drover validate clusters
  drover validate clusters --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig
  drover validate clusters -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerb(cmd, conn, &o, nil, day2.ValidateClusters)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	validateFlags(cmd, &o)
	return cmd
}

func newValidateApplicationCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := day2.ValidateOptions{}
	cmd := &cobra.Command{
		Use:   "application APP",
		Short: "Check one protected application",
		Long: `Checks the application's DRPlacementControl (the hub's report, Validated, Available,
PeerReady, Protected) and DRPolicy, its group on each cluster (role, reconciled generation,
DataReady, DataProtected, ClusterDataProtected), each PVC the primary's group protects (its
backend, replication and last sync) and any PVC selected but not protected, the last capture of
its objects, and what a failover to the peer would need now (as drover plan failover checks).`,
		Example: `  drover validate application db -n app
  drover validate application db -n app --cluster-kubeconfig east=east.kubeconfig -o yaml`,
		Aliases: []string{"app"},
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			return runVerb(cmd, conn, &o, &o.Namespace, day2.ValidateApplication)
		},
	}
	conn.AddFlags(cmd.Flags())
	validateFlags(cmd, &o)
	return cmd
}

func validateFlags(cmd *cobra.Command, o *day2.ValidateOptions) {
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().Var(&o.Kubeconfigs, "cluster-kubeconfig", "NAME=FILE: reach DRCluster NAME with your kubeconfig FILE instead of the hub's credential (repeatable)")
}
