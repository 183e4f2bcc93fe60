// Package replication is the seam between the agent and the mechanisms that move a PVC's data to
// the peer cluster. It owns the Backend interface, the Result every backend operation returns,
// the Registry that picks a PVC's backend from its StorageClass, and Fake, a backend for tests of
// the agent. The mechanisms live in subpackages: volrep (csi-addons VolumeReplication) and, later,
// volsync.
//
// # Contract of a backend
//
// Every method is idempotent and begin-or-continue: the agent calls it at every reconcile with
// what it observes now, and the method either starts the operation, continues it, or, when it
// is already done, changes nothing and says so. A method never blocks waiting for storage; it
// returns Retry with a delay instead. It persists nothing outside the Kubernetes objects it
// manages, so a restarted agent continues where the last one stopped.
//
// A method returns a Result:
//   - Done: the operation is complete for this PVC;
//   - Retry: it is under way or waiting for something (a class, the storage); call again after
//     RetryAfter. Reason and Message say what it waits for;
//   - Failed: it cannot succeed until someone changes something; Reason and Message say what to
//     change. The agent reports it in a condition and calls again later, so fixing the cause is
//     enough.
//
// An error returned beside a Result is reserved for Status: operations report API failures as
// Retry with ReasonError, so one failing PVC never stops the others.
//
// Backends are registered explicitly where the agent is wired (NewRegistry), never through
// init(). Selection is per PVC: the VolumeReplicationGroup's storageClassBackends entry naming the
// PVC's StorageClass wins over an entry naming its provisioner.
package replication
