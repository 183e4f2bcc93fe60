package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a recipe travels and how its hooks report (docs/decisions/0011-application-hooks.md): the
// hub copies the DRRecipe named by a DRPlacementControl into the spec of its
// VolumeReplicationGroups (VRGRecipe), with every namespace filled in; the agents run the hooks
// at their points and record each run in the group's status (HookRun); the hub copies the runs
// into the DRPlacementControl's status with the cluster they ran on. A person answers a failed
// hook with a HookDecision on the DRPlacementControl, which the hub hands to the group whose
// hook failed.

// HookResult is how a run of a hook ended, or that it still runs.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed;Continued;PassedOver
type HookResult string

const (
	// HookRunning means the hook runs.
	HookRunning HookResult = "Running"
	// HookSucceeded means the hook succeeded (exit code 0, a Job complete, a scale reached, a check
	// true).
	HookSucceeded HookResult = "Succeeded"
	// HookFailed means the hook failed and its onError is Fail: the action stands at the hook's step
	// until a person retries or continues it (HookDecision).
	HookFailed HookResult = "Failed"
	// HookContinued means the hook failed and its onError is Continue: the action went on.
	HookContinued HookResult = "Continued"
	// HookPassedOver means the hook failed with onError Fail and a person continued the action past
	// it (HookDecision Continue).
	HookPassedOver HookResult = "PassedOver"
)

// MaxHookOutput is how many bytes of a hook's output (the end of its stdout and stderr, or the
// termination message of a Job's failed pod) a HookRun keeps.
const MaxHookOutput = 2048

// HookRun is one run of a hook.
type HookRun struct {
	// name of the hook in the recipe.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// point is the hook's point.
	// +required
	Point HookPoint `json:"point,omitempty"`

	// cluster the hook ran on; set by the hub in the DRPlacementControl's status, empty in a
	// VolumeReplicationGroup's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster,omitempty"`

	// action is the VRGRecipe's action the run belongs to (the hub's actionStartTime of the
	// failover or relocation, in RFC 3339).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Action string `json:"action,omitempty"`

	// attempt counts the runs of this hook for this action, from 1; a retry asked by a person
	// runs the next attempt.
	// +required
	// +kubebuilder:validation:Minimum=1
	Attempt int32 `json:"attempt,omitempty"`

	// result of the run.
	// +required
	Result HookResult `json:"result,omitempty"`

	// startTime is when the run started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// duration is how long the run took; unset while it runs.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// exitCode is an exec hook's exit code (the last pod's that failed, with pods All).
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// output is the end of the hook's output: an exec's stdout and stderr, or a Job's failed
	// pod's termination message; at most MaxHookOutput bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Output string `json:"output,omitempty"`

	// message says what happened, in words: which pod, which Job, what a check last saw, why it
	// failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// HookDecisionKind is a person's answer to a hook that failed with onError Fail.
// +kubebuilder:validation:Enum=Retry;Continue
type HookDecisionKind string

const (
	// HookRetry runs the failed hook again.
	HookRetry HookDecisionKind = "Retry"
	// HookContinueAction records the failed hook as passed over and goes on with the action.
	HookContinueAction HookDecisionKind = "Continue"
)

// HookDecision answers one failed run of a hook: it names the hook and the attempt that failed,
// so that a decision taken for one failure is never applied to a later one.
type HookDecision struct {
	// hook is the name of the failed hook.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Hook string `json:"hook,omitempty"`

	// attempt is the failed attempt this decision answers.
	// +required
	// +kubebuilder:validation:Minimum=1
	Attempt int32 `json:"attempt,omitempty"`

	// decision is Retry (run the hook again) or Continue (go on past it).
	// +required
	Decision HookDecisionKind `json:"decision,omitempty"`
}

// VRGRecipe is the DRRecipe as the hub hands it to a managed cluster: copied when the action
// started, each namespace filled in (never empty), checked by the hub against the
// DRPlacementControl's protected namespaces. The agent checks the namespaces again against the
// group's before each hook.
type VRGRecipe struct {
	// name of the DRRecipe on the hub.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// action identifies the failover or relocation the copy was taken for: the hub's
	// actionStartTime in RFC 3339; empty while no action ran. Runs of another action are not
	// this action's.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Action string `json:"action,omitempty"`

	// spec is the recipe.
	// +required
	Spec DRRecipeSpec `json:"spec"`

	// decisions are a person's answers to failed hooks of this group, at most one per hook.
	// +optional
	// +listType=map
	// +listMapKey=hook
	// +kubebuilder:validation:MaxItems=32
	Decisions []HookDecision `json:"decisions,omitempty"`
}
