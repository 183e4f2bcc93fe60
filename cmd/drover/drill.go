package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/drill"
)

func newDrillCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := drill.Options{}
	checkJob := ""
	cmd := &cobra.Command{
		Use:   "drill APP [--check-job FILE] [--keep DURATION] [--to CLUSTER] [--wait]",
		Short: "Test an application's recovery on its peer in an isolated sandbox, without touching the primary",
		Long: `Asks the hub for a DR drill of the application (a DRDrill): the peer cluster's agent starts a
copy of the application in sandbox namespaces (<namespace>-drill-<id>, isolated by a default-deny
NetworkPolicy) from a point-in-time copy of its replicated volumes, runs the check Job there once
the workloads are Ready, and the hub records the RTO, the RPO per volume and each step, then tears
the sandbox down. The primary, its application and its replication are not touched. Where no copy
of a volume can be made without stopping replication, the drill runs in readiness mode: it checks
every part of a recovery it can and starts nothing. See docs/drill.md.

--check-job FILE is a Job, or a Job's spec, in YAML or JSON: the check run in the sandbox (its pod
reaches only the sandbox, and must meet Pod Security restricted unless an administrator allows
baseline; at most 4 pods, 6 retries and a day); without it the drill passes when the workloads are
Ready. --keep keeps
the sandbox that long after the result (at most 24h) for a person to look at. --to names the
cluster of the sandbox (the peer of the primary by default). Checks first that the application
exists, that --to is its peer, and that no other drill of it runs.

With --wait it prints a line as each step starts and ends, then the drill's report, and fails
when the drill fails, is refused or aborted (a failover or relocation overtakes a drill). Exit
codes (docs/cli.md): 0 asked or passed, 1 failed or aborted, 2 bad usage, 3 refused, 4 timed out,
6 unreachable.`,
		Example: `  drover drill db -n app
  drover drill db -n app --check-job check.yaml --wait
  drover drill db -n app --keep 30m --wait
  drover drill history db -n app
  drover drill report db -n app --format markdown > drill-report.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Log = args[0], cmd.ErrOrStderr()
			return runVerb(cmd, conn, &o, &o.Namespace, drill.Run, func() error { return readCheckJob(&o, checkJob) })
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&checkJob, "check-job", "", "a YAML or JSON file holding a Job, or a Job's spec, run in the sandbox once its workloads are Ready")
	cmd.Flags().StringVar(&o.CheckNamespace, "check-namespace", "", "the protected namespace whose sandbox runs the check (default: the first)")
	cmd.Flags().DurationVar(&o.KeepFor, "keep", 0, "keep the sandbox this long after the result, at most 24h (default: torn down at once)")
	cmd.Flags().StringVar(&o.To, "to", "", "the cluster of the sandbox (default: the peer of the current primary)")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "follow the drill, printing each step, then its report")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", drill.DefaultTimeout, "the drill fails when it has no result by then; --wait waits this, --keep and the teardown")
	outputFlag(cmd, &o.Output, "name, json, yaml or jsonpath=TEMPLATE: the DRDrill once asked (with --wait, once ended); the text goes to stderr (default: text)")
	_ = cmd.MarkFlagFilename("check-job", "yaml", "yml", "json")
	completeFlags(cmd, conn, []string{"to"})
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindApp)
	cmd.AddCommand(newDrillHistoryCommand(), newDrillReportCommand())
	return cmd
}

// readCheckJob puts the check Job of --check-job FILE in the options, when a file is named.
func readCheckJob(o *drill.Options, file string) error {
	if file == "" {
		return nil
	}
	spec, err := drill.ReadCheckJob(file)
	if err != nil {
		return err
	}
	o.Check, o.CheckSource = spec, file
	return nil
}

func newDrillHistoryCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := drill.HistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history APP",
		Short: "List an application's drills, newest first, with their result, RTO and RPO",
		Long: `Lists the DRDrills of the application, newest first: phase, result, mode, target cluster, RTO,
worst RPO and age. The hub keeps the newest finished drills of each application (its
DRPlacementControl's spec.drillHistoryLimit, 10 by default). With -o json or -o yaml it prints
them as a Kubernetes List; -o name prints drdrill.drover.io/NAME lines.`,
		Example: `  drover drill history db -n app
  drover drill history db -n app -o json
  drover drill history db -n app -o jsonpath='{.items[0].status.rtoSeconds}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			return runVerb(cmd, conn, &o, &o.Namespace, drill.History)
		},
	}
	conn.AddFlags(cmd.Flags())
	outputFlag(cmd, &o.Output, "name, json, yaml or jsonpath=TEMPLATE: the DRDrills as a List (default: a table)")
	cmd.ValidArgsFunction = completeFirstArg(conn, cli.KindApp)
	return cmd
}

func newDrillReportCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := drill.ReportOptions{}
	cmd := &cobra.Command{
		Use:   "report APP [DRILL] [--format markdown|text]",
		Short: "Print the report of an application's drill (the newest by default) for an auditor",
		Long: `Prints the record of one drill of the application, its newest unless DRILL names one: the
application and its clusters, when it ran, its mode, the RTO, the RPO of each protected PVC and
the worst, the point in time each sandbox volume started from, the steps with their durations,
the check with its log tail, the teardown and the health of the primary's replication during
the drill. --format markdown prints it as a Markdown document to keep as evidence.`,
		Example: `  drover drill report db -n app
  drover drill report db db-x7k2p -n app --format markdown > drill-report.md`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Drill = args[0], argAt(args, 1)
			return runVerb(cmd, conn, &o, &o.Namespace, drill.Report)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Format, "format", drill.ReportText, "markdown or text")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{drill.ReportMarkdown, drill.ReportText}, cobra.ShellCompDirectiveNoFileComp))
	apps := completeFirstArg(conn, cli.KindApp)
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return apps(cmd, args, toComplete)
		}
		c, ns, err := conn.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := drill.Names(cmd.Context(), c, ns, args[0], toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}
