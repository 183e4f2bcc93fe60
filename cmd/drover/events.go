package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
)

func newEventsCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := day2.EventsOptions{}
	cmd := &cobra.Command{
		Use:   "events APP",
		Short: "Show an application's events from the hub and both clusters, oldest first",
		Long: `Merges the Events of the application's DRPlacementControl on the hub with those of its
namespaces (its VolumeReplicationGroup's among them) on both clusters of its policy, sorted by
time, with the cluster as a column. A cluster whose events cannot be read is named after the
table with the reason. The managed clusters are reached with the hub's credential there,
which may not list Events: pass --cluster-kubeconfig NAME=FILE with a kubeconfig of yours.`,
		Example: `  drover events db -n app
  drover events db -n app -o json
  drover events db -n app --cluster-kubeconfig east=east.kubeconfig --cluster-kubeconfig west=west.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Notes = args[0], cmd.ErrOrStderr()
			return runVerb(cmd, conn, &o, &o.Namespace, day2.Events)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "json, yaml or jsonpath=TEMPLATE: the events as a List, each annotated drover.io/cluster with where it was read (default: a table)")
	cmd.Flags().Var(&o.Kubeconfigs, "cluster-kubeconfig", "NAME=FILE: reach DRCluster NAME with your kubeconfig FILE instead of the hub's credential (repeatable)")
	return cmd
}
