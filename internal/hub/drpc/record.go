package drpc

import (
	"github.com/drover-io/drover/internal/hub/hubrecord"
)

// The hub records on each group it writes what the group does not hold of the hub's objects
// (the DRPlacementControl's spec, the DRPolicy's name and clusters, the DRClusters' region and
// profile: hubrecord.Record), in the annotation hubrecord.Annotation, so that a hub lost with
// its etcd can be rebuilt from the managed clusters (`drover hub restore`,
// docs/decisions/0017). It is written with the group's spec (ensureGroup), and alone when only
// it differs; it is metadata, so the group's generation, and a mark of a failover made
// without the hub, do not change with it.

// record is this reconcile's record of the DRPlacementControl, as the groups carry it.
func (sc *scope) record() (string, error) {
	return hubrecord.New(sc.drpc, sc.policy, sc.drclusters).Encode()
}
