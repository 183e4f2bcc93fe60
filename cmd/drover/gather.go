package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
)

func newGatherCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := day2.GatherOptions{}
	cmd := &cobra.Command{
		Use:   "gather [APP]",
		Short: "Write a tarball of what a bug report needs, secrets redacted",
		Long: `Writes a .tar.gz with, from the hub, the DRPlacementControls (APP's alone when named),
DRPolicies and DRClusters; from each managed cluster the VolumeReplicationGroups, PVCs, PVs,
VolumeReplications, ReplicationSources and ReplicationDestinations, VolumeSnapshots of the
applications' namespaces, and the storage, replication and snapshot classes; from every cluster
the events of those namespaces and of drover-system, drover's Deployments and pods, and their
logs where they can be read. README.md inside lists every file and what could not be collected,
with why; a cluster that does not answer is noted there, not fatal.

Secrets are listed by name, type and key names only. Every value of every Secret read, the
tokens and keys inside kubeconfigs (the DRClusters' Secrets) and the credentials of the clients
used are scrubbed from every file, in clear and in base64. Every container of a pod or of a
Deployment's, StatefulSet's, DaemonSet's, Job's or CronJob's pod template (init and ephemeral
containers too) keeps its variables' names and its program, never a literal environment value,
an argument or the rest of its command.

The managed clusters are reached with the hub's credential there (the DRClusters' Secrets),
which may read only drover's groups; --cluster-kubeconfig NAME=FILE uses one of yours.`,
		Example: `  drover gather
  drover gather db -n app --file db-report.tar.gz
  drover gather --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = argAt(args, 0)
			return runVerb(cmd, conn, &o, &o.Namespace, day2.Gather)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.File, "file", "f", "", "the tarball to write (default: drover-gather-<UTC time>.tar.gz here); it must not exist")
	cmd.Flags().Var(&o.Kubeconfigs, "cluster-kubeconfig", "NAME=FILE: reach DRCluster NAME with your kubeconfig FILE instead of the hub's credential (repeatable)")
	return cmd
}
