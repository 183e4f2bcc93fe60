// Package hooks runs one hook of an application's DRRecipe (api/v1alpha1/drrecipe_types.go) on
// a managed cluster with the agent's identity, and decides which hook of a point runs next from
// the hook runs recorded in a VolumeReplicationGroup's status and a person's decisions
// (docs/decisions/0011-application-hooks.md).
//
// A Runner runs the four kinds: exec (through the API server's pods/exec, WebSocket with SPDY
// as fallback, as kubectl does), job (a Job from the template, named from the recipe, hook,
// action and attempt so that a retry or a restart never creates two), scale (the scale
// subresource of a Deployment or StatefulSet, waited for) and check (an object's condition or a
// CEL expression over it, polled). Every hook is first checked against the namespaces its group
// protects (Allowed): one that names another namespace is refused before any call.
//
// Next is pure: given a point's hooks, the recorded runs of the recipe's action and the
// decisions, it says which hook and attempt runs next, whether one still runs, whether the
// action stands at a failed hook, or whether every hook of the point has passed. The
// VolumeReplicationGroup reconciler (internal/agent/vrg, hooks.go) runs the hooks it is told
// to, off its worker, and records their runs.
package hooks
