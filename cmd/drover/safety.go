package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
)

// stdinIsTerminal decides whether a confirmation can be asked on the command's stdin; tests
// replace it to stand for a person at a terminal.
var stdinIsTerminal = func(cmd *cobra.Command) bool { return cli.IsTerminal(cmd.InOrStdin()) }

// safetyFlags are --dry-run and -y/--yes of the destructive verbs.
type safetyFlags struct {
	dryRun, yes bool
}

// add registers --dry-run (what) and -y/--yes (confirm, the help says when it is asked).
func (s *safetyFlags) add(cmd *cobra.Command, dryRun, yes string) {
	cmd.Flags().BoolVar(&s.dryRun, "dry-run", false, dryRun)
	cmd.Flags().BoolVarP(&s.yes, "yes", "y", false, yes)
}

// confirmation is how the command asks for confirmation, on its stdin and stdout.
func (s *safetyFlags) confirmation(cmd *cobra.Command) *cli.Confirmation {
	return &cli.Confirmation{Yes: s.yes, In: cmd.InOrStdin(), Out: cmd.OutOrStdout(),
		Terminal: func() bool { return stdinIsTerminal(cmd) }}
}

// Help texts of the action verbs' --dry-run and --yes.
const (
	actionDryRunHelp = "print the plan (as drover plan does) and change nothing"
	actionYesHelp    = "with --all: do not ask for confirmation (required when stdin is not a terminal)"
)

// newActionCommand completes the command of failover or relocate, whose texts cmd holds: their
// arguments, flags, completions and RunE.
func newActionCommand(action v1alpha1.DRAction, cmd *cobra.Command) *cobra.Command {
	conn := &cli.Connection{}
	m := &massFlags{}
	s := &safetyFlags{}
	h := &hookFlags{}
	o := actions.ActionOptions{Action: action}
	cmd.Args = func(cmd *cobra.Command, args []string) error { return m.args(cmd, args, 1) }
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if h.decision() != "" {
			return runDecide(cmd, args, conn, m, s, o, h)
		}
		return runActionVerb(cmd, args, conn, m, s, o)
	}
	actionFlags(cmd, conn, &o)
	m.add(cmd, true)
	s.add(cmd, actionDryRunHelp, actionYesHelp)
	h.add(cmd)
	completeFlags(cmd, conn, []string{"to", "from"})
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindApp)
	return cmd
}

// runActionVerb is the RunE of failover and relocate: the plan with --dry-run, else the action
// on one application or, with --all and after confirmation, on every one selected.
func runActionVerb(cmd *cobra.Command, args []string, conn *cli.Connection, m *massFlags, s *safetyFlags, o actions.ActionOptions) error {
	switch {
	case s.dryRun && m.all:
		m.o.Output = o.Output
		return runMassPlan(cmd, conn, m, o.Action, o.To)
	case s.dryRun:
		return runPlan(cmd, conn, actions.PlanOptions{App: args[0], Action: o.Action, To: o.To, Output: o.Output})
	case m.all:
		m.o.Confirm = s.confirmation(cmd)
		return runMassAction(cmd, conn, m, o)
	}
	return runAction(cmd, args, conn, o)
}

// runPlan prints the plan of one application's action.
func runPlan(cmd *cobra.Command, conn *cli.Connection, o actions.PlanOptions) error {
	return runVerb(cmd, conn, &o, &o.Namespace, actions.Plan)
}

// actionOf names the action of a plan's first argument.
func actionOf(name string) (v1alpha1.DRAction, bool) {
	switch name {
	case "failover":
		return v1alpha1.ActionFailover, true
	case "relocate":
		return v1alpha1.ActionRelocate, true
	}
	return "", false
}
