package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
)

// hookFlags are --retry and --continue of failover and relocate: a person's answer to the hook
// that failed in the action in force.
type hookFlags struct {
	retry, cont bool
}

// add registers the flags. With either, --to is not required: the answer is to the action in
// force, which names its cluster already.
func (h *hookFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&h.retry, "retry", false,
		"run again the hook that failed in the action in force (drover status lists it), once its cause is fixed; takes no --to")
	cmd.Flags().BoolVar(&h.cont, "continue", false,
		"go on past the hook that failed in the action in force, recorded as PassedOver; takes no --to")
	cmd.MarkFlagsMutuallyExclusive("retry", "continue")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if h.decision() != "" {
			return cmd.Flags().SetAnnotation("to", cobra.BashCompOneRequiredFlag, []string{"false"})
		}
		return nil
	}
}

// decision is the answer the flags ask for; empty when neither is set.
func (h *hookFlags) decision() v1alpha1.HookDecisionKind {
	switch {
	case h.retry:
		return v1alpha1.HookRetry
	case h.cont:
		return v1alpha1.HookContinueAction
	}
	return ""
}

// runDecide is the RunE of failover and relocate with --retry or --continue.
func runDecide(cmd *cobra.Command, args []string, conn *cli.Connection, m *massFlags, s *safetyFlags, o actions.ActionOptions, h *hookFlags) error {
	switch {
	case m.all:
		return cli.Usage(errors.New("--retry and --continue answer one application's failed hook: name the application instead of --all"))
	case s.dryRun, o.Wait, o.To != "", o.Output != "":
		return cli.Usage(errors.New("--retry and --continue take none of --to, --wait, --dry-run or -o: " +
			"they answer the action in force; follow it with drover status"))
	}
	d := actions.DecideOptions{App: args[0], Decision: h.decision()}
	return runVerb(cmd, conn, &d, &d.Namespace, actions.Decide)
}
