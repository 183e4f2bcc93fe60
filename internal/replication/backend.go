package replication

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Outcome says whether a backend operation is complete.
type Outcome int

const (
	// OutcomeDone means the operation is complete.
	OutcomeDone Outcome = iota
	// OutcomeRetry means the operation is under way or waiting; call again after RetryAfter.
	OutcomeRetry
	// OutcomeFailed means the operation cannot succeed until someone changes something.
	OutcomeFailed
)

func (o Outcome) String() string {
	switch o {
	case OutcomeDone:
		return "Done"
	case OutcomeRetry:
		return "Retry"
	default:
		return "Failed"
	}
}

// Result is the outcome of one backend operation on one PVC.
type Result struct {
	Outcome Outcome
	// RetryAfter is when to call again (OutcomeRetry only).
	RetryAfter time.Duration
	// Reason is a condition reason (a constant of api/v1alpha1) and Message a sentence for a
	// person saying what is awaited or what to fix; both empty when Done.
	Reason  string
	Message string
	// Writable, on a Protect that is not Done, says the PVC is already primary and writable:
	// only its replication is not established yet (DataReady True, DataProtected False). A VolSync
	// primary right after a failover, while the peer is lost and no destination is known, is one.
	Writable bool
}

// Done returns a Result for a complete operation.
func Done() Result { return Result{Outcome: OutcomeDone} }

// Retry returns a Result for an operation under way, to be called again after d.
func Retry(d time.Duration, reason, message string) Result {
	return Result{Outcome: OutcomeRetry, RetryAfter: d, Reason: reason, Message: message}
}

// Failed returns a Result for an operation that cannot succeed as things are.
func Failed(reason, message string) Result {
	return Result{Outcome: OutcomeFailed, Reason: reason, Message: message}
}

// IsDone reports whether the operation is complete.
func (r Result) IsDone() bool { return r.Outcome == OutcomeDone }

func (r Result) String() string {
	switch r.Outcome {
	case OutcomeDone:
		return "Done"
	case OutcomeRetry:
		return fmt.Sprintf("Retry after %s (%s: %s)", r.RetryAfter, r.Reason, r.Message)
	default:
		return fmt.Sprintf("Failed (%s: %s)", r.Reason, r.Message)
	}
}

// PVCContext is what a backend knows of the PVC it works on. The agent fills it from what it
// observed in this reconcile; a backend must not change the objects it points to.
type PVCContext struct {
	// VRG is the VolumeReplicationGroup protecting the PVC.
	VRG *v1alpha1.VolumeReplicationGroup
	// PVC is the protected claim; it is Bound.
	PVC *corev1.PersistentVolumeClaim
	// PV is the volume the claim is bound to.
	PV *corev1.PersistentVolume
	// StorageClassName and Provisioner identify the PVC's StorageClass. Provisioner is the
	// class's provisioner, or the PV's CSI driver when the class no longer exists.
	StorageClassName string
	Provisioner      string
	// Interval is the VRG's schedulingInterval, parsed.
	Interval time.Duration
	// MoverSecurityContext is who the PVC's VolSync movers run as, as the agent resolved it (the
	// group's spec, the pods that mount the PVC, or what the group recorded); nil when no user
	// is known, and MoverUserUnknown then says why.
	MoverSecurityContext *v1alpha1.VolSyncMoverSecurityContext
	MoverUserUnknown     string
	// SyncTrigger, for a VolSync PVC of a group whose recipe has BeforeSync hooks, is the manual
	// trigger of the newest sync cycle whose hooks passed (docs/decisions/0019): the source
	// carries it; empty keeps the trigger the source has.
	SyncTrigger string
	// Group, when set, is the consistency group the PVC is replicated with: the backend
	// replicates it only as a member of the group, never on its own.
	Group *GroupContext
}

// GroupContext is the consistency group of a PVC, as the agent resolved it.
type GroupContext struct {
	// Name is the group's name in the VolumeReplicationGroup's spec.consistencyGroups.
	Name string
	// Label is the value of v1alpha1.LabelConsistencyGroup that the agent put on every member:
	// the backend's group selects its members by it.
	Label string
}

// SyncStatus is what a backend observes of a PVC's replication.
type SyncStatus struct {
	// ReplicationID identifies the replication (VolRep: the VolumeReplicationClass), for
	// status.protectedPVCs; empty when there is none yet.
	ReplicationID string
	// LastSyncTime is when the last completed sync started (the recovery point); nil before the
	// first sync. LastSyncDuration and LastSyncBytes describe that sync when the backend knows.
	LastSyncTime     *metav1.Time
	LastSyncDuration *metav1.Duration
	LastSyncBytes    *int64
	// RefreshInterval is how often the storage refreshes the LastSyncTime it reports: a sync
	// may be reported up to that long after it completed (VolRep: csi-addons' refresh of a
	// primary VolumeReplication's status). Zero when each sync is reported as it completes.
	RefreshInterval time.Duration
	// Primary is true when the storage reports the volume primary (writable) on this cluster
	// (VolRep: the VolumeReplication's status.state). The storage reports no split brain (with
	// csi-addons a promotion is forced while the peer is primary): drover tells it from this and
	// the stores' epochs.
	Primary bool
	// GroupHandle is the storage's handle of the PVC's consistency group (VolRep: the
	// VolumeGroupReplicationContent's volumeGroupReplicationHandle); empty for a PVC replicated
	// on its own, or while the storage has not made the group. A promotion on the peer needs it.
	GroupHandle string
	// DemotedInSync is true when the volume is secondary, its storage acted on the demotion last
	// asked and reports it in sync with its peer: every write made while it was primary has
	// reached the peer (a relocation's final sync). A storage that reports no last sync for a
	// secondary (csi-addons) proves the final sync so.
	DemotedInSync bool
}

// Backend replicates PVCs with one mechanism. See the package documentation for the contract
// every method keeps.
type Backend interface {
	// Name is the backend's name as storageClassBackends entries name it.
	Name() v1alpha1.ReplicationBackend

	// Protect makes the PVC a replicating primary: it creates or continues whatever the
	// mechanism needs and is Done once the PVC is primary and replication is established.
	// It must be idempotent and must not wait.
	Protect(ctx context.Context, pc *PVCContext) Result

	// Status observes the PVC's replication: its last completed sync. A PVC with no replication
	// yet has a zero SyncStatus and no error; an error is an API failure.
	Status(ctx context.Context, pc *PVCContext) (SyncStatus, error)
}

// The operations below complete the lifecycle. They are designed here so the Backend interface
// grows into them without changing its shape; each joins Backend when the agent's path that
// calls it is built and tested (DESIGN.md, "The PVC rules").

// Demoter makes a primary PVC secondary.
type Demoter interface {
	// Demote makes the PVC secondary so the peer's data wins. With resync it discards writes
	// made here since the peer was promoted (a failover's old primary). The agent calls it only
	// once no pod and no VolumeAttachment uses the PVC. Done when the PVC is secondary.
	Demote(ctx context.Context, pc *PVCContext, resync bool) Result
}

// DemotionObserver is a Demoter that can tell, reading only (its cache), whether a PVC is
// already demoted as asked. The agent then neither fences nor checks the PVC's consumers again:
// what guards a demotion is moot once it happened, and a settled secondary, woken at each of
// the storage's syncs, would otherwise re-check live every time.
type DemotionObserver interface {
	// IsDemoted reports whether the PVC is secondary with resync as asked, as the storage
	// last reported it. It never writes; false when it cannot tell.
	IsDemoted(ctx context.Context, pc *PVCContext, resync bool) bool
}

// ProtectionObserver is a Backend that can tell, reading only (its cache), how a PVC's
// protection stands once Protect has nothing left to write. The agent asks it at the end of a
// pass about a PVC that Protect left waiting for the storage earlier in the same pass: the
// storage often answers within the pass (a promotion, a new VolumeReplication), and the answer
// then reaches this pass's status instead of waiting for the next pass, which at 100 groups
// queues behind all the others.
type ProtectionObserver interface {
	// ObserveProtection returns what Protect would return now, and false when Protect still has
	// something to create or change (it never writes) or the backend cannot tell.
	ObserveProtection(ctx context.Context, pc *PVCContext) (Result, bool)
}

// Promoter makes a secondary PVC primary.
type Promoter interface {
	// Promote makes the PVC primary after the agent restored its PV and PVC. With force it
	// succeeds while the peer is unreachable (a failover). Done when the PVC is writable.
	Promote(ctx context.Context, pc *PVCContext, force bool) Result
}

// FinalSyncer carries every write of a primary to the peer before a relocation's demotion.
type FinalSyncer interface {
	// FinalSync syncs the PVC one last time; the agent calls it only once no consumer uses the
	// PVC and new consumers are fenced. Done when the peer holds every write.
	FinalSync(ctx context.Context, pc *PVCContext) Result
}

// Cleaner tears a PVC's replication down when it is no longer protected.
type Cleaner interface {
	// Cleanup removes every object the backend created for the PVC and leaves the PVC and its
	// data in place. Done when nothing of the backend remains.
	Cleanup(ctx context.Context, pc *PVCContext) Result
}
