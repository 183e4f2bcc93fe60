package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DrillPhase is where a drill stands.
// +kubebuilder:validation:Enum=Pending;Running;TearingDown;Passed;Failed;Aborted;Refused
type DrillPhase string

const (
	// DrillPending means the drill was asked for and has not started.
	DrillPending DrillPhase = "Pending"
	// DrillRunning means the sandbox is being built, started or checked, or kept for keepFor.
	DrillRunning DrillPhase = "Running"
	// DrillTearingDown means the sandbox is being removed; the result is known (status.result).
	DrillTearingDown DrillPhase = "TearingDown"
	// DrillPassed means the sandbox started and passed its check, and was torn down. Final.
	DrillPassed DrillPhase = "Passed"
	// DrillFailed means the sandbox did not start, or its check failed, and it was torn down. Final.
	DrillFailed DrillPhase = "Failed"
	// DrillAborted means a failover or relocation overtook the drill, which was torn down. Final.
	DrillAborted DrillPhase = "Aborted"
	// DrillRefused means the drill could not start (the DRPC is not Protected, another drill runs,
	// ...); the condition Accepted says why. Final.
	DrillRefused DrillPhase = "Refused"
)

// DrillMode says how much of the recovery a drill could exercise.
// +kubebuilder:validation:Enum=Full;Readiness
type DrillMode string

const (
	// DrillModeFull means the workloads started in the sandbox from a point-in-time copy of the
	// replicated volumes.
	DrillModeFull DrillMode = "Full"
	// DrillModeReadiness means no copy of some volume could be made without stopping replication; the
	// drill checked every part of a recovery it could (objects dry-run applied, metadata decoded,
	// StorageClasses present, replication healthy) and started nothing. status.readiness says
	// what was checked and what could not be.
	DrillModeReadiness DrillMode = "Readiness"
)

// DrillResult is the outcome of one part of a drill.
// +kubebuilder:validation:Enum=Passed;Failed;Skipped
type DrillResult string

const (
	// DrillResultPassed means the part did what it should.
	DrillResultPassed DrillResult = "Passed"
	// DrillResultFailed means the part did not; its message says why.
	DrillResultFailed DrillResult = "Failed"
	// DrillResultSkipped means the part did not run (no check asked for, readiness mode, an abort).
	DrillResultSkipped DrillResult = "Skipped"
)

// DRDrillSpec asks for a non-disruptive test of an application's recovery.
type DRDrillSpec struct {
	// drpcName is the DRPlacementControl, in the drill's namespace, whose application is drilled.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="drpcName is immutable: create another drill"
	DRPCName string `json:"drpcName,omitempty"`

	// targetCluster is the cluster the sandbox is made on. It defaults to the peer of the
	// application's current primary; it may not be the primary.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetCluster is immutable: create another drill"
	TargetCluster string `json:"targetCluster,omitempty"`

	// check is a Job run in the sandbox once its workloads are Ready, to verify the data (for
	// example pg_isready or a row count). It runs in the sandbox of checkNamespace. Its pod may
	// reach only the sandbox. Without it the drill passes when the workloads are Ready.
	// Its pod must meet the sandbox's Pod Security level (restricted, unless an administrator
	// labelled the drill's namespace drover.io/drill-pod-security=baseline), and it may run at
	// most 4 pods at once and 4 in all, retry 6 times and set activeDeadlineSeconds of at most a
	// day (the drill's timeout when unset). The hub's admission policy drover-drill-check and the
	// hub refuse a drill whose check does not (the schema of a Job is left out of this CRD, whose
	// rules therefore cannot see it).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Check *batchv1.JobSpec `json:"check,omitempty"`

	// checkNamespace is the protected namespace whose sandbox runs the check; it defaults to the
	// first protected namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CheckNamespace string `json:"checkNamespace,omitempty"`

	// keepFor is how long the sandbox is kept once the drill has its result, for a person to look
	// at it, before it is torn down. Default 0: torn down at once. At most 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="keepFor must be from 0s to 24h: the sandbox holds a copy of the application's data"
	KeepFor *metav1.Duration `json:"keepFor,omitempty"`

	// timeout bounds the drill from its start to its result; past it the drill fails and is torn
	// down. Default 30m; from 1m to 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="timeout must be from 1m to 24h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DrillStep is one step of a drill, with its duration.
type DrillStep struct {
	// name is the step: Accepted, CopyingVolumes, RestoringObjects, StartingWorkloads,
	// Checking, Kept, TearingDown, or a readiness check.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// started is when the step started.
	// +optional
	Started *metav1.Time `json:"started,omitempty"`
	// finished is when the step ended; empty while it runs.
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	// result is the step's outcome once finished.
	// +optional
	Result DrillResult `json:"result,omitempty"`
	// message says what the step did or why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// DrillVolume is the point-in-time copy of one protected PVC a sandbox started from.
type DrillVolume struct {
	// pvcNamespace and pvcName name the protected PVC.
	// +required
	// +kubebuilder:validation:MaxLength=63
	PVCNamespace string `json:"pvcNamespace"`
	// +required
	// +kubebuilder:validation:MaxLength=253
	PVCName string `json:"pvcName"`
	// point names what the copy was made from (a VolumeSnapshot of the replicated data, or a
	// clone of the secondary image).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Point string `json:"point,omitempty"`
	// pointTime is the time of the primary's data the copy holds: the start of the sync that
	// made it.
	// +optional
	PointTime *metav1.Time `json:"pointTime,omitempty"`
	// sandboxPVC is the PVC in the sandbox made from the point.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SandboxPVC string `json:"sandboxPVC,omitempty"`
	// rpoSeconds is the age of the point when the drill was asked for.
	// +optional
	RPOSeconds *int64 `json:"rpoSeconds,omitempty"`
}

// DrillCheck is what a drill checked in readiness mode, or the check Job's result.
type DrillCheck struct {
	// name is what was checked.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// result is its outcome; Skipped says it could not be checked.
	// +required
	Result DrillResult `json:"result"`
	// message says what was found.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// DrillCheckJob is the outcome of the spec's check Job.
type DrillCheckJob struct {
	// result is Passed when the Job succeeded, Failed when it failed or did not finish in time,
	// Skipped when there is none or the sandbox did not start.
	// +required
	Result DrillResult `json:"result"`
	// logTail is the check pod's termination message, after a line naming its container, pod
	// and exit code: what the container wrote to its terminationMessagePath or, when it failed
	// without writing one, the end of its log as its kubelet reported it (the agent creates the
	// Job with terminationMessagePolicy FallbackToLogsOnError); or, in parentheses, why there is
	// none. At most 4 KiB, the end kept.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	LogTail string `json:"logTail,omitempty"`
	// message says why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// DrillSandboxNamespace maps a protected namespace to its sandbox.
type DrillSandboxNamespace struct {
	// source is the protected namespace.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Source string `json:"source"`
	// sandbox is the namespace the drill made for it.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Sandbox string `json:"sandbox"`
}
