// Package drill reconciles DRDrills on the hub: a non-disruptive test of one application's
// recovery. The hub asks the target cluster's agent, through the cluster gateway, for a
// DrillSandbox (the agent starts the application there in isolated namespaces from point-in-time
// copies of its replicated data, internal/agent/drill), follows its status into the DRDrill's
// record (steps with their durations, volumes and their RPO, RTO, mode, readiness, check), keeps
// the sandbox for spec.keepFor, then deletes it and waits until the agent's finalizer has
// removed everything. The primary, its VolumeReplicationGroup and its replication are never
// touched: the hub only reads the DRPlacementControl, and a failover or relocation asked for
// during a drill aborts it; the DRPlacementControl's own machine never waits for a drill.
//
// The states (status.phase), one function each in machine.go:
//
//	Pending ──(refused: CheckNotAllowed, DRPCNotFound, DrillRunning, DrillWaiting, NotProtected, BadTarget)──► Refused
//	   │
//	   └──► Running ──(sandbox result, then keepFor; or timeout; or action overtook)──► TearingDown
//	                                                                                      │
//	        Passed / Failed / Aborted ◄──────────(the DrillSandbox is gone)──────────────┘
//
// The check is a Job's spec a tenant writes and the target cluster runs: the hub refuses it
// (CheckNotAllowed) unless its pod meets the sandbox's Pod Security level (restricted, or
// baseline for a namespace an administrator labelled tenancy.LabelDrillPodSecurity) and it keeps
// to internal/drillcheck's bounds; the DrillSandbox carries that level, and the check the drill's
// timeout as its deadline when it has none (sandbox.go).
//
// A drill waits in Pending while the DRPlacementControl's Protected is Unknown (a hub just
// started, a primary that does not answer), up to its timeout; only the drill holding the
// application's turn does (the drill that runs, else the oldest that is not final, from the
// hub's own index, turns.go): another is refused at once, DrillRunning or DrillWaiting. Refused, Passed, Failed and
// Aborted are final. Every step is idempotent and all state lives
// in the API objects (the DRDrill's status, the DrillSandbox named from the DRDrill's UID): a
// hub restarted at any point observes the same objects and continues. The hub does not watch
// DrillSandboxes (the gateway's watch holds VolumeReplicationGroups only): while a drill runs
// it reads its sandbox every few seconds, which costs one request per running drill. Finished
// drills are history: the newest DRPlacementControl.spec.drillHistoryLimit (default 10) of an
// application are kept, older ones deleted (history.go). metrics.go exposes the last successful
// drill of each application.
package drill
