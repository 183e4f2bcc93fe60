// Package cli is the library behind drover's verbs for people: status, failover, relocate and
// plan. Each verb is a function that takes a controller-runtime client of the hub cluster, an
// io.Writer and an options struct, so tests drive it against a real API server and the cobra
// commands in cmd/drover stay thin. Nothing here keeps state between calls.
//
// The verbs only read DRPlacementControls, DRPolicies and DRClusters and, for failover and
// relocate, merge-patch a DRPlacementControl's spec: every decision is the hub's. The checks
// made before patching mirror the hub's own (internal/hub/drpc), so a refusal is explained here,
// with what to do, before the hub would refuse it in a condition.
//
// Safety (confirm.go, exit.go): a mass action asks its Confirmation, after printing the plan
// and before any patch, to have the cluster's name typed on a terminal (or --yes); every error
// a verb returns carries the exit status a script reads (refused, timed out, partly done,
// unreachable, bad usage), which cmd/drover's main turns into the process's exit code.
package cli
