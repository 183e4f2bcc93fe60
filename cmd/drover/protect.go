package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
	"github.com/drover-io/drover/internal/cli/cluster"
)

func newProtectCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := actions.ProtectOptions{}
	cmd := &cobra.Command{
		Use:   "protect APP --policy POLICY --cluster CLUSTER",
		Short: "Protect an application: create its DRPlacementControl on the hub",
		Long: `Creates the DRPlacementControl APP in the namespace (-n): drover protects the PVCs that
--pvc-selector selects (every PVC when empty) and the objects of the protected namespaces (the
DRPlacementControl's own namespace by default), replicating them between the clusters of the
DRPolicy. The application runs on --cluster now.

With --placement NAME the application's placement comes from a Placement that a GitOps tool
follows (placement mode) instead of captured namespaces. --dry-run sends the DRPlacementControl
to the API server as a dry run: the CRD's rules and the admission policies check it, it is
printed (-o yaml), and nothing is created.`,
		Example: `  drover protect db -n shop --policy lab-volrep --cluster east --pvc-selector app=db
  drover protect db -n shop --policy lab-volrep --cluster east --dry-run -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = argAt(args, 0)
			return runVerb(cmd, conn, &o, &o.Namespace, actions.Protect)
		},
	}
	conn.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.Policy, "policy", "", "the DRPolicy pairing the two clusters (required)")
	f.StringVar(&o.Cluster, "cluster", "", "the cluster the application runs on now (required)")
	f.StringVar(&o.PVCSelector, "pvc-selector", "", "label selector of the PVCs to protect, as kubectl's -l (default: every PVC)")
	f.StringSliceVar(&o.ProtectedNamespaces, "protected-namespace", nil, "a namespace to protect (repeatable; default: the DRPlacementControl's own; others only from an admin namespace)")
	f.StringVar(&o.Placement, "placement", "", "protect in placement mode: the Placement a GitOps tool follows, in the same namespace")
	f.BoolVar(&o.DryRun, "dry-run", false, "have the API server validate the DRPlacementControl and create nothing")
	outputFlag(cmd, &o.Output, "name, json, yaml or jsonpath=TEMPLATE (default: a line)")
	completeFlags(cmd, conn, []string{"cluster"}, "policy")
	return cmd
}

func newUnprotectCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := actions.UnprotectOptions{}
	s := &safetyFlags{}
	cmd := &cobra.Command{
		Use:   "unprotect APP",
		Short: "Stop protecting an application: delete its DRPlacementControl",
		Long: `Deletes the DRPlacementControl APP in the namespace (-n). The hub then removes its groups
on both clusters: replication stops and the stores forget the application. The application,
its PVCs and their data stay where they run. On a terminal it asks you to type APP; without a
terminal it needs --yes. --dry-run says what it would remove and changes nothing.`,
		Example: `  drover unprotect db -n shop
  drover unprotect db -n shop --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.DryRun, o.Confirm = args[0], s.dryRun, s.confirmation(cmd)
			return runVerb(cmd, conn, &o, &o.Namespace, actions.Unprotect)
		},
	}
	conn.AddFlags(cmd.Flags())
	s.add(cmd, "say what would be removed and change nothing", "do not ask for confirmation (required when stdin is not a terminal)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: name (default: a line)")
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindApp)
	return cmd
}

func newClusterListCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cluster.ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the hub's DRClusters: validated, reachable, declared lost, their policies",
		Example: `  drover cluster list
  drover cluster list -o wide
  drover cluster list -o yaml
  drover cluster list -o jsonpath='{.items[*].metadata.name}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerb(cmd, conn, &o, nil, cluster.List)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	outputFlag(cmd, &o.Output, "wide, name, json, yaml or jsonpath=TEMPLATE (default: a table)")
	return cmd
}
