package dashboard

import (
	"fmt"
	"strings"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/status"
)

// hookRow is one run of a hook of the application's recipe, as the hub reports it for the
// action in force.
type hookRow struct {
	Cluster, Hook, Point, Attempt, Took, ExitCode, Message, Output, Advice string
	Result                                                                 state
}

// hooksOf are the runs of the recipe's hooks the DRPlacementControl reports (status.hooks):
// each with its result judged (a failure that stops the action critical, one passed over or
// continued a warning), its output for a run that did not succeed, and for a failed one what
// to do.
func hooksOf(d *v1alpha1.DRPlacementControl) []hookRow {
	var out []hookRow
	for _, r := range d.Status.Hooks {
		row := hookRow{Cluster: dash(r.Cluster), Hook: r.Name, Point: string(r.Point), Attempt: fmt.Sprint(r.Attempt),
			Took: "-", ExitCode: "-", Result: hookResultState(r.Result), Message: r.Message}
		if r.Duration != nil {
			row.Took = r.Duration.Duration.String()
		} else if r.StartTime != nil && r.Result == v1alpha1.HookRunning {
			row.Took = "running since " + r.StartTime.UTC().Format("15:04:05") + " UTC"
		}
		if r.ExitCode != nil {
			row.ExitCode = fmt.Sprint(*r.ExitCode)
		}
		if r.Result != v1alpha1.HookSucceeded && r.Result != v1alpha1.HookRunning {
			row.Output = strings.TrimRight(r.Output, "\n")
		}
		if r.Result == v1alpha1.HookFailed {
			row.Advice = status.FailedHookAdvice(d, r)
		}
		out = append(out, row)
	}
	return out
}

// hookResultState is a hook's result in the page's words and levels.
func hookResultState(r v1alpha1.HookResult) state {
	switch r {
	case v1alpha1.HookSucceeded:
		return stateOf(string(r), levelOK)
	case v1alpha1.HookFailed:
		return stateOf(string(r), levelCritical)
	case v1alpha1.HookContinued, v1alpha1.HookPassedOver:
		return stateOf(string(r), levelWarn)
	default:
		return stateOf(cli.Dash(string(r)), levelNone)
	}
}
