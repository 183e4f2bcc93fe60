package status

import (
	"fmt"
	"io"
	"strings"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// outputTail is how much of a hook's output `drover status` prints: the end of the last line
// or two, enough to see why it failed; the DRPlacementControl's status.hooks keeps 2 KiB.
const outputTail = 200

// printHooks prints each run of the recipe's hooks the hub reports for the action in force
// (status.hooks): cluster, hook, point, attempt, result, duration, and the end of its output
// for a run that did not succeed; then, for a failed run, what to do. Nothing when there is
// none.
func printHooks(w io.Writer, d *v1alpha1.DRPlacementControl) {
	runs := d.Status.Hooks
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nHooks:")
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "  CLUSTER\tHOOK\tPOINT\tATTEMPT\tRESULT\tTOOK\tOUTPUT")
	var failed []v1alpha1.HookRun
	for _, r := range runs {
		took := "-"
		if r.Duration != nil {
			took = r.Duration.Duration.String()
		}
		out := "-"
		if r.Result != v1alpha1.HookSucceeded && r.Result != v1alpha1.HookRunning {
			out = tail(r.Output, r.Message)
		}
		if r.ExitCode != nil && r.Result != v1alpha1.HookSucceeded {
			out = fmt.Sprintf("exit %d: %s", *r.ExitCode, out)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", cli.Dash(r.Cluster), r.Name, r.Point, r.Attempt, r.Result, took, out)
		if r.Result == v1alpha1.HookFailed {
			failed = append(failed, r)
		}
	}
	_ = tw.Flush()
	for _, r := range failed {
		fmt.Fprintf(w, "  %s\n", FailedHookAdvice(d, r))
	}
}

// FailedHookAdvice says, of a run of a hook that failed with onError Fail, where and at which
// attempt it failed and the two ways on: retry it or continue past it.
func FailedHookAdvice(d *v1alpha1.DRPlacementControl, r v1alpha1.HookRun) string {
	verb := "failover"
	if cli.ActionOf(d.Status.Phase) == string(v1alpha1.ActionRelocate) {
		verb = "relocate"
	}
	return fmt.Sprintf("%s failed on %s at attempt %d: fix the cause, then drover %s %s -n %s --retry, or --continue to go on past it",
		r.Name, cli.Dash(r.Cluster), r.Attempt, verb, d.Name, d.Namespace)
}

// tail is the end of a hook's output on one line, or its message when it printed nothing.
func tail(output, message string) string {
	s := strings.Join(strings.Fields(output), " ")
	if s == "" {
		s = strings.Join(strings.Fields(message), " ")
	}
	if s == "" {
		return "-"
	}
	if len(s) > outputTail {
		s = "..." + s[len(s)-outputTail:]
	}
	return s
}
