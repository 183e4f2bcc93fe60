// Package hubrestore is `drover hub restore`: a new, empty hub (drover's hub installed) rebuilt
// from what the managed clusters hold, for a hub lost with its etcd
// (docs/decisions/0017-a-hub-rebuilt-from-the-groups.md).
//
//	read.go     each cluster read with the operator's kubeconfig: its name, its S3 profiles'
//	            Secrets, its VolumeReplicationGroups and the hub's record on each
//	plan.go     what the hub is given: the DRClusters (joined with internal/join), the
//	            DRPolicies (their name and clusters recorded, the rest the groups' spec), the
//	            DRPlacementControls (recorded, their action the groups' state)
//	restore.go  the plan printed, confirmed, applied: each object created when missing and
//	            left as it is otherwise (but a restore's declaration that a cluster is lost,
//	            lifted once it answers), so a second run, or a run after a crash, converges
//
// It writes no group: the hub rebuilds each restored DRPlacementControl's status from its
// groups (internal/hub/drpc, rebuild.go), with the rule both read (internal/hub/hubrecord).
// A cluster that does not answer is never guessed at: when the records name it, it gets a
// DRCluster from them, declared lost and marked as the restore's declaration, which a restore
// run once it answers lifts after joining it (docs/decisions/0018).
package hubrestore
