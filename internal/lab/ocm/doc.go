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
// predicates or taints): the clusters the placement's decisions name now score highest (the
// Steady prioritizer, pkg/placement/plugins/steady), ties go by cluster name
// (pkg/placement/controllers/scheduling/schedule.go), and the first numberOfClusters are taken,
// all of them when it is unset. The Balance prioritizer, which spreads placements over
// clusters, is left out: the lab's placements are too few for it to matter. So a Placement's
// choice often differs from drover's: after a failover that names the new primary and the old
// one still demoting, it keeps the first by name; while drover names no cluster (a relocation's
// final sync) it names one again.
//
//   - scheduler.go: Scheduler, its Run loop and one Pass, and choose, the rule above.
//
// It is lab code: production packages never import it.
package ocm
