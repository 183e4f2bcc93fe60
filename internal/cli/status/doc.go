// Package status is `drover status [APP]` and `drover status -w` (watch.go): a table of the
// protected applications as the hub reports them (phase, primary, PeerReady, Protected, last
// sync and RPO lag against the policy's interval, progression, problem), for one APP also its
// conditions, each cluster's group and its PVCs, or the DRPlacementControls as objects. The
// dashboard reads the same judgement through AppView (the core's App with its status Row).
package status
