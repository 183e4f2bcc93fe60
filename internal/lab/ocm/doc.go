// Package ocm is the lab's stand-in for Open Cluster Management's placement controller on the
// hub (open-cluster-management-io/ocm, pkg/placement/controllers/scheduling). Like the real one,
// it writes the PlacementDecisions of every Placement itself and fights any other writer:
//
//   - for each Placement not being deleted and not annotated
//     cluster.open-cluster-management.io/experimental-scheduling-disable: "true", it chooses
//     clusters and writes them into <placement>-decision-1 (labelled with the placement's name
//     and owned by the Placement), replacing whatever another controller wrote there, its
//     labels included;
//   - it deletes every other PlacementDecision labelled with the placement's name;
//   - a Placement annotated with the disable annotation, and its decisions, are left alone.
//
// The choice models upstream's default scheduling for the lab's clusters (no ManagedClusterSets,
// predicates, taints or prioritizerPolicy): its two default prioritizers at weight 1 each
// (pkg/placement/controllers/scheduling/schedule.go). Steady gives the clusters the placement's
// own decisions name now 100, the others 0 (pkg/placement/plugins/steady); Balance gives a
// cluster no other placement's decision names 100 and the busiest −100, in proportion between
// (pkg/placement/plugins/balance). The clusters are sorted by the sum, ties by name, and the
// first numberOfClusters are taken, all of them when it is unset. So a placement does not stay
// where it is: on the cluster other placements use most, Balance cancels Steady, and a cluster
// used less than half as much wins. A Placement's choice often differs from drover's: after a
// failover that names the new primary and the old one still demoting, it keeps one of them;
// while drover names no cluster (a relocation's final sync) it names one again; handed back,
// it may move the application away from its data.
//
//   - scheduler.go: Scheduler, its Run loop and one Pass, and choose, the rule above.
//
// It is lab code: production packages never import it.
package ocm
