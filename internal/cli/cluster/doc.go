// Package cluster is the CLI's verbs about the hub and its clusters rather than an
// application: `drover cluster list` (clusters.go: each DRCluster validated, reachable,
// declared lost, its peers), `drover cluster lost` (lost.go: declare a cluster lost, or undo
// it, after saying what the hub will do) and `drover version` (version.go: this binary's,
// the hub cluster's, the hub's and each agent's version as the hub records them).
package cluster
