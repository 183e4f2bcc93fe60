// Package bench measures drover at scale in the lab (`drover lab bench`, `make bench`): for N
// applications of one and of three PVCs each, the time to protect them all, to fail them all
// over with their cluster stopped, to recover (PeerReady) once it returns and to relocate them
// back with no record lost, each against the floor the cluster's own controllers set on the
// same machine in the same run; settled API writes per VolumeReplicationGroup, the memory of
// drover's processes and reconcile latency. A second mode drills N VolSync applications at once
// (drills.go: their RTO, RPO, modes and the time to all results and to all torn down); a third
// fills the hub with many small DRPlacementControls and measures the hub's steady requests to
// each managed cluster.
//
// It drives the applications with internal/story's Fleet and asks for the actions with
// drover's own mass actions (internal/cli), as a person would. Lab code: production code never
// imports it.
package bench
