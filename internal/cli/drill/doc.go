// Package drill is `drover drill`: Run asks the hub for a drill of an application (a DRDrill
// the hub and the agent carry out on the peer cluster, in a sandbox) and with --wait follows
// it step by step (wait.go) until its report; History lists an application's drills, Report
// renders one for an auditor (report.go, render.go: markdown or text). The checks made before
// creating the DRDrill mirror the hub's (internal/hub/drill), so a refusal is explained here.
package drill
