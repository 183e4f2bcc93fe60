package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
)

func newPlanCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := actions.PlanOptions{}
	m := &massFlags{}
	cmd := &cobra.Command{
		Use:   "plan failover|relocate (APP | --all [--from CLUSTER]) --to CLUSTER",
		Short: "Preview a failover or relocation without changing anything",
		Long: `Prints what drover failover or drover relocate would do now: each precondition, met or not
and why, the steps the hub would take, and the expected data loss (a failover loses the writes
made since the last group sync; a relocation loses none). Changes nothing.
With --all it prints a row per application that failover --all or relocate --all would
select: where it runs, whether it can start, is refused (and why) or has nothing to do.`,
		Example: `  drover plan relocate db -n app --to east
  drover plan failover db -n app --to west
  drover plan failover --all -A --from east --to west
  drover plan failover --all -A --from east --to west -o jsonpath='{.items[?(@.verdict=="refused")].metadata.name}'`,
		Args: func(cmd *cobra.Command, args []string) error { return m.args(cmd, args, 2) },
		RunE: func(cmd *cobra.Command, args []string) error {
			action, ok := actionOf(args[0])
			if !ok {
				return cli.Usage(fmt.Errorf("unknown action %q: use drover plan failover or drover plan relocate", args[0]))
			}
			o.Action = action
			if m.all {
				m.o.Output = o.Output
				return runMassPlan(cmd, conn, m, o.Action, o.To)
			}
			o.App = args[1]
			return runPlan(cmd, conn, o)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.To, "to", "", "the cluster to move the application to (required)")
	_ = cmd.MarkFlagRequired("to")
	outputFlag(cmd, &o.Output, "name, json, yaml or jsonpath=TEMPLATE: the plan as a Plan object (with --all a List of them) (default: text)")
	m.add(cmd, false)
	completeFlags(cmd, conn, []string{"to", "from"})
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []string{"failover", "relocate"}, cobra.ShellCompDirectiveNoFileComp
		}
		return completeFirstArg(conn, cli.KindApp)(cmd, args[1:], toComplete)
	}
	return cmd
}

// runMassPlan is the RunE of plan failover|relocate --all.
func runMassPlan(cmd *cobra.Command, conn *cli.Connection, m *massFlags, action v1alpha1.DRAction, to string) error {
	o := m.o
	o.Action, o.To = action, to
	return runVerb(cmd, conn, &o, &o.Namespace, actions.PlanAll)
}
