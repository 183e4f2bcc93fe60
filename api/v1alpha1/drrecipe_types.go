package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HookPoint is the moment of a failover, relocation or sync at which a hook runs
// (docs/decisions/0011-application-hooks.md).
// +kubebuilder:validation:Enum=BeforeSync;BeforeStop;AfterRestore;AfterReady
type HookPoint string

const (
	// HookBeforeSync runs on the primary, while the application runs, before each copy whose
	// instant drover chooses (a VolSync sync drover triggers), and on a relocation once more
	// ahead of the final sync, before the BeforeStop hooks. It is how an application flushes (a
	// CHECKPOINT) before its point.
	HookBeforeSync HookPoint = "BeforeSync"
	// HookBeforeStop runs on a relocation's source before drover stops the workload, so that the
	// application drains its clients and shuts down cleanly; the final sync waits for it. With a
	// group, it runs before that group stops (groups stop in the reverse of their order).
	HookBeforeStop HookPoint = "BeforeStop"
	// HookAfterRestore runs on the target once the volumes and objects are restored and before
	// any workload starts: no pod of the application runs yet, so only Jobs and checks may.
	HookAfterRestore HookPoint = "AfterRestore"
	// HookAfterReady runs on the target once the workload is Ready. With a group, it runs once
	// that group is Ready and before the next group starts (a migration between a database and
	// its web tier).
	HookAfterReady HookPoint = "AfterReady"
)

// HookOnError says what a hook's failure (a non-zero exit, a failed Job, a check that did not
// hold, its timeout) does to the action.
// +kubebuilder:validation:Enum=Fail;Continue
type HookOnError string

const (
	// HookFail stops the action at the hook's step, with the hook's output in the
	// DRPlacementControl's condition, until a person retries or continues it.
	HookFail HookOnError = "Fail"
	// HookContinue records the failure and goes on.
	HookContinue HookOnError = "Continue"
)

// ExecPods says in which of the pods an exec hook's selector picks the command runs.
// +kubebuilder:validation:Enum=All;One
type ExecPods string

const (
	// ExecAllPods runs the command in every running pod the selector picks, one after another.
	ExecAllPods ExecPods = "All"
	// ExecOnePod runs it in one: the first Ready pod by name.
	ExecOnePod ExecPods = "One"
)

// RecipeWorkloadKind is a kind of object that runs pods, whose readiness drover knows.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;Job
type RecipeWorkloadKind string

// Kinds of objects a recovery group may hold.
const (
	RecipeDeployment  RecipeWorkloadKind = "Deployment"
	RecipeStatefulSet RecipeWorkloadKind = "StatefulSet"
	RecipeDaemonSet   RecipeWorkloadKind = "DaemonSet"
	RecipeJob         RecipeWorkloadKind = "Job"
)

// RecipeResources picks objects of one kind in a protected namespace: by name, by label, or
// every one of the kind.
// +kubebuilder:validation:XValidation:rule="!(has(self.names) && has(self.selector))",message="set at most one of names or selector: names picks objects by name, selector by label, neither every object of the kind"
type RecipeResources struct {
	// kind of the objects.
	// +required
	Kind RecipeWorkloadKind `json:"kind,omitempty"`

	// namespace of the objects: one of the DRPlacementControl's protected namespaces. Empty
	// means the DRRecipe's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// names of the objects.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`

	// selector picks the objects by label.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// RecoveryGroup is one step of the restore order: its objects are created together, and the
// next group waits until every one of them is Ready.
type RecoveryGroup struct {
	// name of the group, a DNS label; hooks name it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// resources are the objects of the group.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Resources []RecipeResources `json:"resources,omitempty"`

	// readyTimeout bounds the wait for the group's objects to be Ready; past it the action stops
	// at this group, as a failed hook with onError Fail does. Default 10m; from 10s to 24h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}(h|m|s))+$') && duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="readyTimeout must be from 10s to 24h in hours, minutes and seconds, such as 10m or 1h30m"
	ReadyTimeout *metav1.Duration `json:"readyTimeout,omitempty"`
}

// ExecHook runs a command in running containers of the application, as kubectl exec does.
type ExecHook struct {
	// namespace of the pods: one of the DRPlacementControl's protected namespaces. Empty means
	// the DRRecipe's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// podSelector picks the pods by label; it may not be empty.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.matchLabels) || has(self.matchExpressions)",message="podSelector must not be empty: an exec hook runs only in the pods it names by label"
	PodSelector metav1.LabelSelector `json:"podSelector"`

	// pods says whether the command runs in every running pod picked (All, the default) or in
	// one (One: the first Ready pod by name).
	// +optional
	Pods ExecPods `json:"pods,omitempty"`

	// container is the container the command runs in; empty means the pod's first container.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Container string `json:"container,omitempty"`

	// command is the program and its arguments, run without a shell (name a shell to have one:
	// ["sh", "-c", "..."]).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`
}

// JobHook runs a Job from a template in a protected namespace and waits for it to finish.
type JobHook struct {
	// namespace of the Job: one of the DRPlacementControl's protected namespaces. Empty means
	// the DRRecipe's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// template is the Job's spec. Its pods run under the namespace's Pod Security level and
	// ServiceAccounts, and the agent sets their terminationMessagePolicy to
	// FallbackToLogsOnError to report the end of a failed pod's log. The schema of a Job is left
	// out of this CRD (as DRDrill's check is): the API server checks it when the Job is created,
	// and the hub reports a template it refuses in the DRPlacementControl's Validated condition.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Template *batchv1.JobSpec `json:"template,omitempty"`
}

// ScaleKind is a kind of workload a scale hook scales.
// +kubebuilder:validation:Enum=Deployment;StatefulSet
type ScaleKind string

// Kinds of workloads a scale hook scales.
const (
	ScaleDeployment  ScaleKind = "Deployment"
	ScaleStatefulSet ScaleKind = "StatefulSet"
)

// ScaleHook sets the replicas of a Deployment or StatefulSet and waits until the workload has
// that many Ready (or, for zero, until its pods are gone).
type ScaleHook struct {
	// kind of the workload.
	// +required
	Kind ScaleKind `json:"kind,omitempty"`

	// namespace of the workload: one of the DRPlacementControl's protected namespaces. Empty
	// means the DRRecipe's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// name of the workload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// replicas is the count to set.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`
}

// CheckObject names the object a check hook reads.
type CheckObject struct {
	// apiVersion of the object, such as v1, apps/v1 or postgresql.cnpg.io/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion,omitempty"`

	// kind of the object. Secrets may not be read.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self != 'Secret'",message="a check may not read a Secret: check the object that uses it"
	Kind string `json:"kind,omitempty"`

	// namespace of the object: one of the DRPlacementControl's protected namespaces. Empty means
	// the DRRecipe's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// CheckCondition is a condition the object's status.conditions must hold.
type CheckCondition struct {
	// type of the condition, such as Ready or Available.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type,omitempty"`

	// status the condition must have; default True.
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status,omitempty"`
}

// CheckHook waits until an object holds a condition or a CEL expression over it is true.
// +kubebuilder:validation:XValidation:rule="has(self.condition) != has(self.expression)",message="a check must set exactly one of condition (a status condition the object must hold) or expression (a CEL expression over the object, bound to self)"
type CheckHook struct {
	// object is what the check reads.
	// +required
	Object CheckObject `json:"object"`

	// condition the object's status.conditions must hold.
	// +optional
	Condition *CheckCondition `json:"condition,omitempty"`

	// expression is a CEL expression over the object, bound to self, that must be true, such as
	// "self.status.readyReplicas == self.spec.replicas". The hub compiles it and reports one
	// that does not compile in the DRPlacementControl's Validated condition.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression,omitempty"`
}

// Hook is one action drover runs for the application at one point of a sync, relocation or
// failover. It sets exactly one of exec, job, scale or check.
// +kubebuilder:validation:XValidation:rule="[has(self.exec), has(self.job), has(self.scale), has(self.check)].filter(x, x).size() == 1",message="each hook must set exactly one of exec, job, scale or check"
// +kubebuilder:validation:XValidation:rule="!has(self.exec) || self.point != 'AfterRestore'",message="an exec hook cannot run at AfterRestore: no pod of the application runs before its workloads start; use a job or a check, or run the exec at AfterReady"
// +kubebuilder:validation:XValidation:rule="!has(self.scale) || self.point != 'BeforeSync'",message="a scale hook cannot run at BeforeSync: it would stop the application before every sync; scale at BeforeStop or AfterReady"
// +kubebuilder:validation:XValidation:rule="!has(self.group) || self.point == 'BeforeStop' || self.point == 'AfterReady'",message="group applies to BeforeStop and AfterReady hooks only: remove it, or move the hook to one of those points"
type Hook struct {
	// name of the hook, a DNS label, unique in the recipe; it names the hook in the status,
	// events, metrics and `drover failover --continue`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// point is when the hook runs. Hooks of one point run one after another in the order they
	// are listed.
	// +required
	Point HookPoint `json:"point,omitempty"`

	// group ties a BeforeStop hook to the stop of that group, an AfterReady hook to its
	// readiness (before the next group starts). It must name one of spec.groups.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Group string `json:"group,omitempty"`

	// onError is what a failure does: Fail (the default) stops the action at the hook, with its
	// output in the DRPlacementControl's condition, until it is retried or continued; Continue
	// records the failure and goes on.
	// +optional
	OnError HookOnError `json:"onError,omitempty"`

	// timeout bounds the hook's run; past it the hook has failed. Default 5m; from 1s to 1h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}(h|m|s))+$') && duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="timeout must be from 1s to 1h in hours, minutes and seconds, such as 30s or 5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// exec runs a command in the application's running containers.
	// +optional
	Exec *ExecHook `json:"exec,omitempty"`

	// job runs a Job and waits for it to finish.
	// +optional
	Job *JobHook `json:"job,omitempty"`

	// scale sets a workload's replicas and waits for them.
	// +optional
	Scale *ScaleHook `json:"scale,omitempty"`

	// check waits for an object's condition or a CEL expression over it.
	// +optional
	Check *CheckHook `json:"check,omitempty"`
}

// DRRecipeSpec is how an application takes part in its recovery: the order its workloads are
// restored (and stopped) in, and the hooks that run at the points of a sync, relocation or
// failover.
// +kubebuilder:validation:XValidation:rule="has(self.groups) || has(self.hooks)",message="a recipe must declare groups (the restore order), hooks, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.hooks) || self.hooks.all(h, !has(h.group) || (has(self.groups) && self.groups.exists(g, g.name == h.group)))",message="a hook's group must name one of spec.groups"
type DRRecipeSpec struct {
	// groups are the restore order: each group's objects are created once the group before it
	// is Ready, and on a relocation they stop in the reverse order. Workloads no group picks
	// start after the last group; other objects (ConfigMaps, Services, ...) are restored before
	// the first.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Groups []RecoveryGroup `json:"groups,omitempty"`

	// hooks are the actions drover runs at their points, in the order listed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Hooks []Hook `json:"hooks,omitempty"`
}

// DRRecipe declares, beside the DRPlacementControl that names it in spec.recipeRef, how the
// application takes part in its own recovery: its restore order and its hooks. The
// application's team owns it; it lives on the hub in the DRPlacementControl's namespace.
// The hub checks it against the DRPlacementControl and copies it into the application's
// VolumeReplicationGroups; the agents run its hooks (docs/hooks.md,
// docs/decisions/0011-application-hooks.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=recipe,categories=drover
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRRecipe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the restore order and the hooks.
	// +required
	Spec DRRecipeSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// DRRecipeList is a list of DRRecipes.
type DRRecipeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DRRecipe `json:"items"`
}
