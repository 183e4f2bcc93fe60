// Package day2 is the CLI's day-2 verbs, those that read the managed clusters as well as the
// hub: validate (an application's or the fleet's DR readiness, end to end: validate.go, with
// the application's, the clusters' and the storage's checks in validate_app.go,
// validate_clusters.go and validate_storage.go), gather (what a bug report needs from the hub,
// both clusters and the stores' listing, Secrets redacted: gather.go, gather_drover.go,
// gather_redact.go) and events (the hub's and both clusters' events merged: events.go). They
// reach the managed clusters with the hub's credential there or, for a person whose rights
// differ, a kubeconfig of theirs (--cluster-kubeconfig, remote.go). Their tests against a lab
// of three clusters live in internal/cli/clilab.
package day2
