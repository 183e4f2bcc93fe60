package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/api/v1alpha1"
)

func newFailoverCommand() *cobra.Command {
	return withoutHub(newActionCommand(v1alpha1.ActionFailover, &cobra.Command{
		Use:   "failover (APP | --all --from CLUSTER) --to CLUSTER",
		Short: "Start an application on CLUSTER from the last replicated point, without its current cluster",
		Long: `Asks the hub to fail the application over to CLUSTER: its volumes are promoted there from
the last group sync (the writes made since are lost; see drover plan failover) and the old
primary is demoted the moment it is reachable again. Checks first that CLUSTER is in the
application's policy, reachable, and that no other action runs; warns when the peer is not
ready or the last sync is stale. With --wait, prints a line on every step until the
application is available on CLUSTER, and fails when the hub refuses the action, has not
taken it up within a minute (no hub runs), or the timeout passes.

With --all --from CLUSTER it fails over every application whose current primary is CLUSTER
(in the namespace, or every namespace with -A; --selector narrows them), one patch per
DRPlacementControl, --workers at once. It prints the plan of each first; if any would be
refused, the whole batch is refused and nothing changes, unless --skip-refused asks for the
others. With --wait it prints a progress line every --progress-interval (available/total, the
slowest still running), each failure with its reason as it happens, and a summary table (per
application: result and duration); it exits 5 (partly done) when any asked failover did not
complete. Before it patches anything it asks to type the --from cluster's name on a terminal;
-y/--yes skips the question and is required when stdin is not a terminal.

With --retry or --continue it answers the hook of the application's recipe that failed in
the action in force (drover status lists it; the hub's Available or PeerReady names it):
--retry runs it again once its cause is fixed, --continue goes on past it (recorded as
PassedOver). It writes spec.hookDecision naming the hook and the failed attempt, so the answer
never applies to a later failure; it is refused when no hook has failed. See docs/hooks.md.

--dry-run prints the plan (as drover plan does) and changes nothing. Exit codes (docs/cli.md):
0 done or previewed, 2 bad usage, 3 refused, 4 timed out, 5 partly done, 6 unreachable.

With --without-hub (the hub is lost) it writes the failover into CLUSTER's
VolumeReplicationGroup itself, through --cluster-kubeconfig CLUSTER=FILE, marked so that a hub
that returns with an older status does not act on it; it prints the plan, asks to type CLUSTER
(or --yes) and follows the group until it is primary with its data ready. Given the old
primary's kubeconfig too (--cluster-kubeconfig east=FILE) it refuses while that group answers
as primary. See docs/decisions/0014-failover-without-the-hub.md.`,
		Example: `  drover failover db -n app --retry
  drover plan failover db -n app --to west
  drover failover db -n app --to west --wait
  drover plan failover --all -A --from east --to west
  drover failover db -n app --to west --dry-run
  drover failover --all -A --from east --to west --wait
  drover failover --all -A --from east --to west --wait --yes
  drover failover --all -n shop --from east --to west -l tier=db --skip-refused --wait
  drover failover db -n app --to west --without-hub --cluster-kubeconfig west=west.kubeconfig`,
	}))
}
