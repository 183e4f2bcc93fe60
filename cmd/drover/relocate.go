package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
)

func newRelocateCommand() *cobra.Command {
	return newActionCommand(v1alpha1.ActionRelocate, &cobra.Command{
		Use:   "relocate (APP | --all) --to CLUSTER",
		Short: "Move an application to CLUSTER with a final sync and no data loss",
		Long: `Asks the hub to relocate the application to CLUSTER: it is stopped where it runs, its
volumes are demoted with a final sync, and only then promoted on CLUSTER and the application
placed there. Refuses, saying what to do, unless both clusters are reachable, PeerReady is
True and the primary's data is protected: with a cluster lost, use failover. With --wait,
prints a line on every step until the application is available on CLUSTER, and fails when
the hub refuses the action, has not taken it up within a minute (no hub runs), or the
timeout passes.

With --all it relocates every application of the namespace (every namespace with -A;
--selector and --from narrow them) to CLUSTER; those already there have nothing to do. The
plan, refusals (the whole batch unless --skip-refused), progress and summary are as for
failover --all; it asks to type the --from cluster's name (without --from, CLUSTER's) on a
terminal, and requires -y/--yes without one.

With --retry or --continue it answers the hook of the application's recipe that failed in
the action in force (drover status lists it; the hub's Available or PeerReady names it):
--retry runs it again once its cause is fixed, --continue goes on past it (recorded as
PassedOver). It writes spec.hookDecision naming the hook and the failed attempt, so the answer
never applies to a later failure; it is refused when no hook has failed. See docs/hooks.md.

--dry-run prints the plan (as drover plan does) and changes nothing. Exit codes (docs/cli.md):
0 done or previewed, 2 bad usage, 3 refused, 4 timed out, 5 partly done, 6 unreachable.`,
		Example: `  drover relocate db -n app --retry
  drover plan relocate db -n app --to east
  drover relocate db -n app --to east --wait
  drover plan relocate --all -A --to east
  drover relocate db -n app --to east --dry-run
  drover relocate --all -A --to east --wait`,
	})
}
