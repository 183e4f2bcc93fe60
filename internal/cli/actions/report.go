package actions

import (
	"io"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// PlanReport is a plan as -o json|yaml|jsonpath prints it: kind Plan of CLIGroupVersion, named
// after the DRPlacementControl.
type PlanReport struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   cli.ObjectMeta    `json:"metadata"`
	Action     v1alpha1.DRAction `json:"action"`
	From       string            `json:"from,omitempty"`
	To         string            `json:"to"`
	// Verdict is "can start", "refused" or "nothing to do"; Detail says why.
	Verdict string      `json:"verdict"`
	Detail  string      `json:"detail,omitempty"`
	Checks  []cli.Check `json:"checks,omitempty"`
	Steps   []string    `json:"steps,omitempty"`
	// Recipe are the hooks and groups of the application's DRRecipe in the order the action
	// runs them, each "on CLUSTER: ...".
	Recipe           []string `json:"recipe,omitempty"`
	ExpectedDataLoss string   `json:"expectedDataLoss,omitempty"`
}

// reportOf is the report of a preview.
func reportOf(p *Preview) PlanReport {
	verdict, detail := (&entry{p: *p}).verdict()
	return PlanReport{APIVersion: cli.CLIGroupVersion, Kind: "Plan", Metadata: cli.ObjectMeta{Name: p.App, Namespace: p.Namespace},
		Action: p.Action, From: p.From, To: p.To, Verdict: verdict, Detail: detail, Checks: p.Checks, Steps: p.Steps, Recipe: p.Recipe, ExpectedDataLoss: p.Loss}
}

// ActionResult is one application's line of a mass action's summary as -o json|yaml|jsonpath
// prints it: kind ActionResult of CLIGroupVersion, named after the DRPlacementControl.
type ActionResult struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   cli.ObjectMeta    `json:"metadata"`
	Action     v1alpha1.DRAction `json:"action"`
	To         string            `json:"to"`
	// Result is Available, failed, timed out, refused, nothing to do, or asked (without --wait).
	Result          string  `json:"result"`
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	Detail          string  `json:"detail,omitempty"`
}

// printMassReports prints the plan (ts without results) or the summary of a mass action as a
// List, or the names of its DRPlacementControls.
func printMassReports(w io.Writer, o *MassOptions, entries []*entry, ts []*tracked) error {
	if o.Output == cli.OutputName {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.a.DRPC.Name)
		}
		return cli.WriteNames(w, "DRPlacementControl", names)
	}
	if ts == nil {
		items := make([]PlanReport, 0, len(entries))
		for _, e := range entries {
			items = append(items, reportOf(&e.p))
		}
		return cli.PrintList(w, items, o.Output)
	}
	items := make([]ActionResult, 0, len(ts))
	for _, t := range ts {
		d := t.a.DRPC
		items = append(items, ActionResult{APIVersion: cli.CLIGroupVersion, Kind: "ActionResult", Metadata: cli.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
			Action: o.Action, To: o.To, Result: t.result, DurationSeconds: t.took.Seconds(), Detail: t.detail})
	}
	return cli.PrintList(w, items, o.Output)
}
