package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

func newPlanCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cli.PlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan failover|relocate APP --to CLUSTER",
		Short: "Preview a failover or relocation without changing anything",
		Long: `Prints what drover failover or drover relocate would do now: each precondition, met or not
and why, the steps the hub would take, and the expected data loss (a failover loses the writes
made since the last group sync; a relocation loses none). Changes nothing.`,
		Example: `  drover plan relocate db -n app --to east
  drover plan failover db -n app --to west`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "failover":
				o.Action = v1alpha1.ActionFailover
			case "relocate":
				o.Action = v1alpha1.ActionRelocate
			default:
				return fmt.Errorf("unknown action %q: use drover plan failover or drover plan relocate", args[0])
			}
			o.App = args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			c, ns, err := conn.Client()
			if err != nil {
				return err
			}
			o.Namespace = ns
			return cli.Plan(cmd.Context(), c, cmd.OutOrStdout(), o)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.To, "to", "", "the cluster to move the application to (required)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
