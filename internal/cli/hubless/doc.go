// Package hubless is what drover does for a person with no hub: it reads and acts on the
// managed clusters directly, each through a kubeconfig of its own, as the hub would through
// its gateway.
//
//	clusters.go  --cluster-kubeconfig [NAME=]FILE: the clusters and their clients
//	status.go    drover status --cluster-kubeconfig: each cluster's VolumeReplicationGroups
//	failover.go  drover failover --without-hub: the plan, the checks from the target's own view,
//	             the promotion written into the target's group with its mark
//	wait.go      following the promotion until the group is primary with its data ready
//
// The hub names an application's group after its DRPlacementControl, in the same namespace
// (internal/hub/drpc), so APP and -n mean here what they mean to the other verbs. A failover
// writes what the hub writes for one (replicationState primary, action Failover) and the mark
// v1alpha1.AnnotationPromotedWithoutHub, which keeps a hub that returns with an older status
// from acting on the group (docs/decisions/0014-failover-without-the-hub.md).
package hubless
