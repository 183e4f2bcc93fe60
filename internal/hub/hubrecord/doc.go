// Package hubrecord is what a lost hub is rebuilt from (docs/decisions/0017): the record the
// hub writes on each VolumeReplicationGroup of what the group does not hold (the
// DRPlacementControl's spec, the DRPolicy's name and clusters, the DRClusters' region and
// profile), and the rules that read the groups back, one for `drover hub restore` (which
// DRPlacementControl spec to write) and for the hub (which status a restored
// DRPlacementControl starts from), so that both read the groups alike.
//
//	record.go   the annotation drover.io/hub-record: its value, written by internal/hub/drpc
//	rebuild.go  Rebuild (the state the groups say the application is in) and Placement (the
//	            spec's action fields that agree with it)
//
// It imports only the API and apimachinery: the hub and the CLI both read it.
package hubrecord
