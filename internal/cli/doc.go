// Package cli is the core of the library behind drover's verbs for people; the verbs live in
// the packages below it:
//
//	internal/cli/          the core: connection, exit codes, confirmation, names, printers, the application model
//	internal/cli/status/   drover status [APP] and status -w; AppView, the dashboard's reading of an application
//	internal/cli/actions/  plan, failover, relocate (--wait), their --all forms and report, protect, unprotect
//	internal/cli/drill/    drover drill, drill history, drill report
//	internal/cli/cluster/  drover cluster list, cluster lost, version
//	internal/cli/day2/     validate, gather, events: the verbs that also read the managed clusters
//	internal/cli/hubless/  status --cluster-kubeconfig, failover --without-hub: the managed clusters with no hub
//	internal/cli/hubrestore/ drover hub restore: a lost hub rebuilt on a new one from the managed clusters
//	internal/cli/clitest/  the tests' builders of hub objects over each package's API server
//	internal/cli/clilab/   the day-2 verbs' tests against a lab of three clusters
//
// Each verb is a function that takes a client (or the Connection) of the hub cluster, an
// io.Writer and an options struct, so tests drive it against a real API server and the cobra
// commands in cmd/drover stay thin. Nothing here keeps state between calls.
//
// The core is what every verb shares, one concern a file: connect.go (the hub found as kubectl
// finds a cluster, the client's rate), exit.go (the exit status an error carries: refused,
// timed out, partly done, unreachable, bad usage, which cmd/drover's main turns into the
// process's exit code), confirm.go (a mass action's Confirmation: the cluster's name typed on a
// terminal, or --yes), names.go (shell completion of drover's object names), output.go (-o
// json|yaml|name|wide|jsonpath and the objects as kubectl prints them), print.go (the clock,
// ages, table cells and the polling defaults), app.go (App: a DRPlacementControl with its
// DRPolicy and DRClusters as the hub reports them, and the readings of its status) and
// checks.go (the preconditions the hub checks before it acts, internal/hub/drpc, which plan
// refuses with and validate reports, so a refusal is explained here, with what to do, before
// the hub would refuse it in a condition).
//
// The verbs read drover's objects on the hub and, for failover and relocate, merge-patch a
// DRPlacementControl's spec (protect creates one): every decision is the hub's. A failover
// reads in order in actions/action.go: Act loads the App, previews the action (plan.go, with
// the core's Checks), refuses or asks the hub, then with --wait follows it until the
// application is Available on the target.
package cli
