// Package drpc reconciles DRPlacementControls on the hub: it keeps one application's
// VolumeReplicationGroups on its two clusters in the roles the spec asks for, through the
// cluster gateway, and runs failover and relocation as an explicit state machine (machine.go)
// recorded in status.phase and status.progression. In placement mode it also writes the
// application's PlacementDecision, and first disables OCM's scheduling of the OCM Placement it
// names, until unprotect (placement.go). It never touches PVCs, pods or storage: the agents do.
// Before anything it checks who may protect what (observe.go, internal/tenancy): a
// DRPlacementControl protects its own namespace unless it is in an admin namespace, never a
// system one, and a namespace belongs to the oldest valid DRPlacementControl that names it,
// which the hub finds in an index kept from the informer's events (owners.go), never by listing
// a namespace's DRPlacementControls: a refused one costs nothing but that lookup.
// It checks the DRRecipe a DRPlacementControl names against what it protects (recipe.go),
// copies it into both groups (frozen from an action's start to its end), shows the hooks' runs
// the agents report in status.hooks and the conditions, and hands a person's spec.hookDecision
// only to the group whose hook failed at that attempt (hooks.go; docs/hooks.md).
// It writes on each group the record a lost hub is rebuilt from (record.go), and starts a
// DRPlacementControl that `drover hub restore` made from the state its groups are in rather
// than deploying it (rebuild.go; internal/hub/hubrecord; docs/decisions/0017).
package drpc
