// Package drill is the agent's DrillSandbox reconciler: the managed cluster's side of a DR drill
// (a DRDrill on the hub). For each namespace the application's VolumeReplicationGroup protects it
// makes the sandbox namespace <ns>-drill-<drillID>, labelled drover.io/drill=<drillID> and
// enforcing the sandbox's Pod Security level (restricted unless the DrillSandbox says baseline;
// the protected namespace's own when stricter), isolated by a default-deny NetworkPolicy (traffic
// only between the drill's sandboxes, and to the cluster's DNS pods on port 53) and bounded by a
// ResourceQuota and a LimitRange (namespaces.go), and starts the application there from a
// point-in-time copy of its replicated data. It builds a sandbox only of a group that may
// protect what it names (vrg.NamespaceProblem), so whoever may create DrillSandboxes cannot
// copy another namespace's application through a group of their making:
//
//   - volumes.go: VolSync, for each PVC the group receives, the destination's latest image is
//     held (volsync.backube/do-not-delete) while the drill runs and copied into the sandbox
//     through a pre-provisioned VolumeSnapshotContent with the image's handle (Retain) and a
//     VolumeSnapshot bound to it there: a PVC cannot be restored from a snapshot of another
//     namespace. The PVC keeps its name, so the workloads find it.
//   - objects.go: the captured objects, read from the group's S3 stores as a promotion reads them
//     (vrg.ReadCapture), restored with the namespace mapped: Services reduced to ClusterIP,
//     Ingresses, Routes, Gateway routes and the application's own NetworkPolicies dropped,
//     CronJobs suspended, service-account tokens never copied.
//   - workloads.go, check.go: the workloads Ready, then the check Job (only within
//     internal/drillcheck's bounds and the sandbox's level), then readyTime.
//   - the check's log tail is its pods' termination messages (the Job's containers made
//     FallbackToLogsOnError), read from their status by internal/termination: no access to pod
//     logs.
//   - teardown.go: on deletion (a finalizer), everything made is removed and the holds released,
//     also after a crash at any step: every step is found again by its labels.
//
// It never touches the group, its PVCs, the ReplicationSources or Destinations, or the primary.
package drill
