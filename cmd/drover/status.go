package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
	"github.com/drover-io/drover/internal/cli/status"
)

// kubectlPluginName is the binary's name when installed as a kubectl plugin (`kubectl drover`).
const kubectlPluginName = "kubectl-drover"

// addCLICommands adds the verbs for people (status, failover, relocate, plan) to the root and,
// when the binary runs as a kubectl plugin, makes help say `kubectl drover`.
func addCLICommands(root *cobra.Command) {
	root.AddCommand(inGroup(groupApps, newStatusCommand(), newFailoverCommand(), newRelocateCommand(), newPlanCommand(),
		newProtectCommand(), newUnprotectCommand(), newDrillCommand())...)
	adaptToPluginName(root, os.Args[0])
}

// adaptToPluginName names the root `kubectl drover` in help, usage and examples when argv0 is
// kubectl-drover: kubectl runs a plugin by its file name.
func adaptToPluginName(root *cobra.Command, argv0 string) {
	if name := strings.TrimSuffix(filepath.Base(argv0), ".exe"); name != kubectlPluginName {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl drover"
	for _, c := range root.Commands() {
		c.Example = strings.ReplaceAll(c.Example, "  drover ", "  kubectl drover ")
	}
}

func newStatusCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := status.Options{}
	watch := false
	cmd := &cobra.Command{
		Use:   "status [APP]",
		Short: "Show protected applications: phase, primary, peer readiness, protection and RPO lag",
		Long: `Lists the DRPlacementControls on the hub (of the namespace, or of all with -A) as a table:
phase, current primary, PeerReady, Protected, the age of the last group sync and the RPO lag
(time since the last sync / the policy's interval, STALE past twice the interval plus the
storage's status refresh), and the current step. For one APP it also prints its conditions, each cluster's group, and the PVCs
the hub lists with each one's last sync against the interval.
With -o json or -o yaml it prints the DRPlacementControls as Kubernetes objects (a List, or the
object for one APP), as kubectl get does; -o name prints drplacementcontrol.drover.io/NAME
lines, -o wide adds the policy and the action asked, -o jsonpath=TEMPLATE applies the template
to the List (or the object). With -w it goes on printing a row (or an object) each time a
DRPlacementControl changes, until interrupted.`,
		Example: `  drover status
  drover status -A
  drover status db -n app
  drover status db -n app -o yaml
  drover status -w
  drover status -o jsonpath='{.items[*].status.currentPrimary}'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = argAt(args, 0)
			if watch {
				return runVerb(cmd, conn, &o, &o.Namespace, status.Watch)
			}
			return runVerb(cmd, conn, &o, &o.Namespace, status.Status)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "list the DRPlacementControls of every namespace")
	outputFlag(cmd, &o.Output, "wide, name, json, yaml or jsonpath=TEMPLATE (default: a table)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the list, print each change of a DRPlacementControl until interrupted")
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindApp)
	return withClusterKubeconfigs(cmd)
}

// actionFlags registers the flags failover and relocate share.
func actionFlags(cmd *cobra.Command, conn *cli.Connection, o *actions.ActionOptions) {
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.To, "to", "", "the cluster to move the application to (required, except with --retry or --continue)")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "follow the action, printing each step, until it completes or fails")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", actions.DefaultTimeout, "how long --wait waits before giving up (the hub goes on)")
	outputFlag(cmd, &o.Output, "name, json, yaml or jsonpath=TEMPLATE: the DRPlacementControl once asked (with --wait, once done), "+
		"with --all the summary as a List of ActionResult, with --dry-run the plan; the progress goes to stderr (default: text)")
	_ = cmd.MarkFlagRequired("to")
}

// runAction is the RunE of failover and relocate.
func runAction(cmd *cobra.Command, args []string, conn *cli.Connection, o actions.ActionOptions) error {
	o.App, o.Log = args[0], cmd.ErrOrStderr()
	return runVerb(cmd, conn, &o, &o.Namespace, actions.Act)
}

// outputFlag registers -o/--output; formats says which the verb prints.
func outputFlag(cmd *cobra.Command, target *string, formats string) {
	cmd.Flags().StringVarP(target, "output", "o", "", "output format: "+formats)
}
