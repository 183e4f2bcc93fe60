package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DRDrillStatus is the drill's record: what an auditor reads.
type DRDrillStatus struct {
	// phase is where the drill stands; Passed, Failed, Aborted and Refused are final.
	// +optional
	Phase DrillPhase `json:"phase,omitempty"`
	// result is the drill's outcome once known (also during TearingDown).
	// +optional
	Result DrillResult `json:"result,omitempty"`
	// mode says whether the workloads were started (Full) or only readiness was checked.
	// +optional
	Mode DrillMode `json:"mode,omitempty"`
	// targetCluster is the cluster the sandbox was made on.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetCluster string `json:"targetCluster,omitempty"`
	// primaryCluster is where the application ran, untouched, during the drill.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PrimaryCluster string `json:"primaryCluster,omitempty"`
	// startTime is when the hub accepted the drill; endTime when its teardown finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// rtoSeconds is the time from the drill's start to every workload of the sandbox Ready and
	// the check passed.
	// +optional
	RTOSeconds *int64 `json:"rtoSeconds,omitempty"`
	// rpoSeconds is the worst age of the points the sandbox started from, when the drill started.
	// +optional
	RPOSeconds *int64 `json:"rpoSeconds,omitempty"`
	// volumes are the point-in-time copies the sandbox started from, per protected PVC.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Volumes []DrillVolume `json:"volumes,omitempty"`
	// namespaces map each protected namespace to its sandbox.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Namespaces []DrillSandboxNamespace `json:"namespaces,omitempty"`
	// steps are the drill's steps in order, with their durations.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Steps []DrillStep `json:"steps,omitempty"`
	// readiness lists what a readiness-mode drill checked, and what it could not.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Readiness []DrillCheck `json:"readiness,omitempty"`
	// check is the outcome of the spec's check Job.
	// +optional
	Check *DrillCheckJob `json:"check,omitempty"`
	// teardown is the outcome of removing the sandbox.
	// +optional
	Teardown *DrillCheck `json:"teardown,omitempty"`
	// primaryReplication says whether the primary's replication stayed healthy during the drill:
	// Passed when every group sync kept within twice the policy's interval.
	// +optional
	PrimaryReplication *DrillCheck `json:"primaryReplication,omitempty"`
	// conditions: Accepted (False with the reason when the drill is refused).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation of the spec last observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DRDrill is a non-disruptive test of one application's recovery: the hub has the target
// cluster's agent start the application in an isolated sandbox from a point-in-time copy of its
// replicated data, measures RTO and RPO, runs the check and tears the sandbox down. The primary
// and its replication are never touched. It lives on the hub, in the DRPC's namespace, and is
// kept as history.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=drill,categories=drover
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.drpcName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="RTO",type=integer,JSONPath=`.status.rtoSeconds`,description="Seconds from the drill's start to the sandbox Ready and checked"
// +kubebuilder:printcolumn:name="RPO",type=integer,JSONPath=`.status.rpoSeconds`,description="Worst age in seconds of the replicated points the sandbox started from"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetCluster`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRDrill struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the drill asked for.
	// +required
	Spec DRDrillSpec `json:"spec"`

	// status is the drill's record.
	// +optional
	Status DRDrillStatus `json:"status,omitempty"`
}

// GetConditions returns the DRDrill's conditions.
func (d *DRDrill) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the DRDrill's conditions.
func (d *DRDrill) SetConditions(conditions []metav1.Condition) { d.Status.Conditions = conditions }

// DRDrillList is a list of DRDrills.
//
// +kubebuilder:object:root=true
type DRDrillList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the DRDrills.
	Items []DRDrill `json:"items"`
}

// DrillSandboxSpec is what the hub asks of the target cluster's agent for one drill.
type DrillSandboxSpec struct {
	// vrgName is the application's VolumeReplicationGroup on this cluster, in the sandbox's
	// namespace: the secondary whose replicated data the sandbox copies. The protected
	// namespaces, PVC selector and stores are read from it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	VRGName string `json:"vrgName,omitempty"`
	// drillID is the short identifier of the drill in sandbox names: each protected namespace
	// ns gets the sandbox namespace ns-drill-<drillID>.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]{1,8}$`
	DrillID string `json:"drillID,omitempty"`
	// check is the Job run in the sandbox of checkNamespace once the workloads are Ready.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Check *batchv1.JobSpec `json:"check,omitempty"`
	// checkNamespace is the protected namespace whose sandbox runs the check.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CheckNamespace string `json:"checkNamespace,omitempty"`
	// podSecurity is the least Pod Security level the sandbox namespaces enforce: restricted
	// (the default), or baseline when an administrator labelled the drill's namespace on the hub
	// drover.io/drill-pod-security=baseline. A protected namespace that enforces a stricter level
	// gives its sandbox that level; privileged is never allowed.
	// +optional
	PodSecurity DrillPodSecurity `json:"podSecurity,omitempty"`
}

// DrillPodSecurity is a Pod Security level a drill's sandbox may enforce.
// +kubebuilder:validation:Enum=restricted;baseline
type DrillPodSecurity string

const (
	// DrillPodSecurityRestricted is the default level of a sandbox.
	DrillPodSecurityRestricted DrillPodSecurity = "restricted"
	// DrillPodSecurityBaseline is the level an administrator may allow for a drill.
	DrillPodSecurityBaseline DrillPodSecurity = "baseline"
)

// DrillSandboxStatus is what the agent built and saw.
type DrillSandboxStatus struct {
	// mode is Full when volumes were copied and workloads started, Readiness otherwise.
	// +optional
	Mode DrillMode `json:"mode,omitempty"`
	// result is Passed once the workloads are Ready and the check passed, Failed when the sandbox
	// cannot start or the check failed; empty while it runs.
	// +optional
	Result DrillResult `json:"result,omitempty"`
	// readyTime is when every workload of the sandbox was Ready and the check had passed.
	// +optional
	ReadyTime *metav1.Time `json:"readyTime,omitempty"`
	// volumes are the copies made, per protected PVC (rpoSeconds is left to the hub).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Volumes []DrillVolume `json:"volumes,omitempty"`
	// namespaces map each protected namespace to its sandbox.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Namespaces []DrillSandboxNamespace `json:"namespaces,omitempty"`
	// steps are the agent's steps with their durations.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Steps []DrillStep `json:"steps,omitempty"`
	// readiness lists what a readiness-mode sandbox checked, and what it could not.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Readiness []DrillCheck `json:"readiness,omitempty"`
	// check is the outcome of the check Job.
	// +optional
	Check *DrillCheckJob `json:"check,omitempty"`
	// message says what the sandbox waits for or why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// observedGeneration is the generation of the spec last observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DrillSandbox is the agent's side of a drill, on the target cluster in the application's
// namespace (beside its VolumeReplicationGroup): sandbox namespaces isolated by a default-deny
// NetworkPolicy, the captured objects restored into them, volumes from point-in-time copies of
// the replicated data, and the check. The hub creates it and deletes it; its finalizer removes
// everything it made.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=drover
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DrillSandbox struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the sandbox asked for.
	// +required
	Spec DrillSandboxSpec `json:"spec"`

	// status is what the agent built and saw.
	// +optional
	Status DrillSandboxStatus `json:"status,omitempty"`
}

// DrillSandboxList is a list of DrillSandboxes.
//
// +kubebuilder:object:root=true
type DrillSandboxList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the DrillSandboxes.
	Items []DrillSandbox `json:"items"`
}
