// Package cli is the library behind drover's verbs for people: status (and -w), plan, failover,
// relocate and their mass forms, protect, cluster list and lost, version, and the day-2 verbs
// validate (an application's or the fleet's DR readiness, end to end), gather (what a bug report
// needs from the hub, both clusters and the stores' listing, Secrets redacted) and events (the
// hub's and both clusters' events merged). Each verb is a function that takes a client (or the
// configuration) of the hub cluster, an io.Writer and an options struct, so tests drive it
// against a real API server and the cobra commands in cmd/drover stay thin. Nothing here keeps
// state between calls.
//
// The verbs read drover's objects on the hub and, for failover and relocate, merge-patch a
// DRPlacementControl's spec (protect creates one): every decision is the hub's. The day-2 verbs
// also read the managed clusters, with the hub's credential there or, for a person whose rights
// differ, a kubeconfig of theirs (--cluster-kubeconfig, remote.go). The checks made before
// patching mirror the hub's own (internal/hub/drpc), so a refusal is explained here, with what
// to do, before the hub would refuse it in a condition.
//
// Safety (confirm.go, exit.go): a mass action asks its Confirmation, after printing the plan
// and before any patch, to have the cluster's name typed on a terminal (or --yes); every error
// a verb returns carries the exit status a script reads (refused, timed out, partly done,
// unreachable, bad usage), which cmd/drover's main turns into the process's exit code.
package cli
