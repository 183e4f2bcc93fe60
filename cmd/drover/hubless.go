package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/hubless"
)

// clusterKubeconfigHelp is --cluster-kubeconfig's help.
const clusterKubeconfigHelp = "kubeconfig of a managed cluster, FILE or NAME=FILE (repeatable): read it directly, with no hub"

// withoutHub adds --without-hub and --cluster-kubeconfig to the failover command: the failover
// written into the target's group directly, for when the hub is lost (docs/decisions/0014).
func withoutHub(cmd *cobra.Command) *cobra.Command {
	var without bool
	var clusters []string
	cmd.Flags().BoolVar(&without, "without-hub", false,
		"fail over with no hub: write the promotion into the target's VolumeReplicationGroup directly, with --cluster-kubeconfig TARGET=FILE (and the old primary's, to check it is not running)")
	cmd.Flags().StringArrayVar(&clusters, "cluster-kubeconfig", nil, clusterKubeconfigHelp+"; only with --without-hub")
	hubRun := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !without {
			if len(clusters) > 0 {
				return cli.Usage(errors.New("--cluster-kubeconfig goes with --without-hub; through the hub, drover reaches the clusters itself"))
			}
			return hubRun(cmd, args)
		}
		f := cmd.Flags()
		if all, _ := f.GetBool("all"); all {
			return cli.Usage(errors.New("--without-hub fails over one application at a time; --all is not supported with it yet"))
		}
		o := hubless.FailoverOptions{App: argAt(args, 0), Clusters: clusters, Log: cmd.ErrOrStderr()}
		o.To, _ = f.GetString("to")
		o.From, _ = f.GetString("from")
		o.Namespace, _ = f.GetString("namespace")
		o.DryRun, _ = f.GetBool("dry-run")
		o.Timeout, _ = f.GetDuration("timeout")
		yes, _ := f.GetBool("yes")
		o.Confirm = &cli.Confirmation{Yes: yes, In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Terminal: func() bool { return stdinIsTerminal(cmd) }}
		return hubless.Failover(cmd.Context(), cmd.OutOrStdout(), o)
	}
	return cmd
}

// withClusterKubeconfigs adds --cluster-kubeconfig to the status command: the application's
// groups read from the managed clusters directly, with no hub.
func withClusterKubeconfigs(cmd *cobra.Command) *cobra.Command {
	var clusters []string
	cmd.Flags().StringArrayVar(&clusters, "cluster-kubeconfig", nil, clusterKubeconfigHelp+
		": each cluster's VolumeReplicationGroups (state, conditions, last sync, lag) instead of the hub's DRPlacementControls")
	hubRun := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(clusters) == 0 {
			return hubRun(cmd, args)
		}
		f := cmd.Flags()
		if w, _ := f.GetBool("watch"); w {
			return cli.Usage(errors.New("--watch is not supported with --cluster-kubeconfig"))
		}
		if out, _ := f.GetString("output"); out != "" {
			return cli.Usage(errors.New("-o is not supported with --cluster-kubeconfig: it prints a table of the groups"))
		}
		o := hubless.StatusOptions{App: argAt(args, 0), Clusters: clusters}
		o.Namespace, _ = f.GetString("namespace")
		o.AllNamespaces, _ = f.GetBool("all-namespaces")
		return hubless.Status(cmd.Context(), cmd.OutOrStdout(), o)
	}
	return cmd
}
