// Package story runs drover's whole story against the lab, as a user would: deploy an
// application with the lab's writer, protect it with a DRPlacementControl, fail it over with
// its cluster stopped, bring the cluster back, fail back, relocate, relocate back, unprotect.
// After every action it proves with the writer's records what was kept and what was lost, and
// a watcher checks throughout that the two clusters never both run a writable primary.
// partition.go fails over while the primary is cut off by the lab's network partition, and
// heals it: the one case drover cannot know, where the watcher reports the two primaries
// instead of failing, and the checks prove that the cut-off cluster's writes never reach the
// new primary and that drover demotes it, with no human step, once it is reachable.
//
// In placement mode the hub behaves as an OCM hub (ocm.go): the case's Placement exists, the
// lab's placement controller schedules it until drover disables its scheduling, and a GitOps
// tool (the lab's deployer, or Argo CD) deploys the application where the decision says.
//
// The workload sts-twin (workload.go, StatefulSetTwoVolumes) gives each pod two PVCs and writes
// twin records across them; a failover reports the pods whose volumes its target holds from
// different instants, out of twin order (twins.go, TornTwin: each volume fails over from its own
// instant unless the case names a consistency group), and a relocation fails on them.
//
// The application's pods run on kwok's fake nodes and the lab storage writes their records on
// their behalf; with Case.AppProcesses (workload.go, writerProcess) they run `drover lab writer`
// as real processes on the lab kubelet's node, writing into their mounted PVCs, and every check
// reads their records and status files as it reads the storage's.
//
// The end-to-end suite (test/e2e) runs it for a matrix of workloads, backends and modes;
// `drover demo` runs it once and prints its table. It is lab code: production code never
// imports it.
package story
