package v1alpha1

// CopyMethodType is how VolSync makes a point-in-time copy of a volume.
// +kubebuilder:validation:Enum=Direct;None;Clone;Snapshot
type CopyMethodType string

const (
	// CopyMethodDirect copies directly from or to the PVC, without a point-in-time copy.
	CopyMethodDirect CopyMethodType = "Direct"
	// CopyMethodNone is the deprecated name of CopyMethodDirect.
	CopyMethodNone CopyMethodType = "None"
	// CopyMethodClone makes the copy by cloning the volume.
	CopyMethodClone CopyMethodType = "Clone"
	// CopyMethodSnapshot makes the copy with a VolumeSnapshot.
	CopyMethodSnapshot CopyMethodType = "Snapshot"
)

// The Synchronizing condition and its reasons.
const (
	// ConditionSynchronizing is True while a synchronization runs.
	ConditionSynchronizing = "Synchronizing"
	// SynchronizingReasonSync: a synchronization is in progress.
	SynchronizingReasonSync = "SyncInProgress"
	// SynchronizingReasonSched: waiting for the next scheduled synchronization.
	SynchronizingReasonSched = "WaitingForSchedule"
	// SynchronizingReasonManual: waiting for a new manual trigger.
	SynchronizingReasonManual = "WaitingForManual"
	// SynchronizingReasonCleanup: cleaning up after a synchronization.
	SynchronizingReasonCleanup = "CleaningUp"
	// SynchronizingReasonError: the synchronization failed.
	SynchronizingReasonError = "Error"
)

// TriggerSpec says when a volume synchronizes. Upstream has one identical type per kind
// (ReplicationSourceTriggerSpec, ReplicationDestinationTriggerSpec).
type TriggerSpec struct {
	// schedule is a cronspec for time-based synchronization.
	// +optional
	// +kubebuilder:validation:Pattern=`^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$`
	Schedule *string `json:"schedule,omitempty"`

	// manual triggers one synchronization whenever it changes; status.lastManualSync takes the
	// same value once it completes.
	// +optional
	Manual string `json:"manual,omitempty"`
}

// MoverResult is the outcome of a mover Job.
type MoverResult string

const (
	// MoverResultSuccessful means the mover Job completed.
	MoverResultSuccessful MoverResult = "Successful"
	// MoverResultFailed means the mover Job failed (VolSync retries it).
	MoverResultFailed MoverResult = "Failed"
)

// MoverStatus is the result and log tail of a mover Job.
type MoverStatus struct {
	// result of the mover Job.
	// +optional
	Result MoverResult `json:"result,omitempty"`
	// logs is the tail of the mover's log.
	// +optional
	Logs string `json:"logs,omitempty"`
}
