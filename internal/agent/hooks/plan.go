package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/api/v1alpha1"
)

// DefaultTimeout bounds a hook that sets none (docs/decisions/0011-application-hooks.md).
const DefaultTimeout = 5 * time.Minute

// AgentServiceAccount is the agent's own ServiceAccount (config/rbac/agent): a Job hook's
// template may not name it.
const AgentServiceAccount = "drover-agent"

// Timeout is the hook's timeout, or DefaultTimeout.
func Timeout(h *v1alpha1.Hook) time.Duration {
	if h.Timeout != nil && h.Timeout.Duration > 0 {
		return h.Timeout.Duration
	}
	return DefaultTimeout
}

// OnError is the hook's onError, Fail when unset.
func OnError(h *v1alpha1.Hook) v1alpha1.HookOnError {
	if h.OnError == "" {
		return v1alpha1.HookFail
	}
	return h.OnError
}

// Namespace is the namespace the hook acts in; empty when it sets no kind.
func Namespace(h *v1alpha1.Hook) string {
	switch {
	case h.Exec != nil:
		return h.Exec.Namespace
	case h.Job != nil:
		return h.Job.Namespace
	case h.Scale != nil:
		return h.Scale.Namespace
	case h.Check != nil:
		return h.Check.Object.Namespace
	}
	return ""
}

// Kind names the hook's kind: exec, job, scale or check.
func Kind(h *v1alpha1.Hook) string {
	switch {
	case h.Exec != nil:
		return "exec"
	case h.Job != nil:
		return "job"
	case h.Scale != nil:
		return "scale"
	case h.Check != nil:
		return "check"
	}
	return "none"
}

// Allowed checks the hook against the namespaces its group protects: the hook's namespace must
// be one of them. The hub fills every namespace in; an empty one is refused too, since the
// agent cannot tell which namespace the recipe meant.
func Allowed(h *v1alpha1.Hook, protected []string) error {
	ns := Namespace(h)
	switch {
	case Kind(h) == "none":
		return fmt.Errorf("hook %s sets none of exec, job, scale or check: fix the DRRecipe", h.Name)
	case ns == "":
		return fmt.Errorf("hook %s names no namespace: the hub fills it in, so this group's recipe was not written by drover's hub; set the %s's namespace in the DRRecipe", h.Name, Kind(h))
	case !slices.Contains(protected, ns):
		return fmt.Errorf("hook %s runs in namespace %s, which this group does not protect (it protects %s): a hook may act only in the application's own namespaces; fix the DRRecipe's namespace",
			h.Name, ns, strings.Join(protected, ", "))
	}
	if h.Check != nil && h.Check.Object.Kind == "Secret" && !strings.Contains(h.Check.Object.APIVersion, "/") {
		return fmt.Errorf("hook %s checks a Secret, which a check may not read: check the object that uses it", h.Name)
	}
	return nil
}

// JobName is the name of a Job hook's Job for one attempt of one action: the same for a retry
// of a pass or a restarted agent, another for the next attempt or action. It is at most 63
// characters, so that it fits the job-name label of its pods.
func JobName(recipe, hook, action string, attempt int32) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", recipe, hook, action, attempt)))
	name := hook
	if len(name) > 45 {
		name = strings.TrimRight(name[:45], "-")
	}
	return "hook-" + name + "-" + hex.EncodeToString(sum[:])[:10]
}

// StepKind is what a point's hooks ask for next.
type StepKind int

const (
	// StepDone means every hook of the point Succeeded, Continued or was PassedOver.
	StepDone StepKind = iota
	// StepRun runs Hook's Attempt (none recorded yet, a retry decided, or a run in progress).
	StepRun
	// StepFailed means Hook's Attempt failed with onError Fail and no decision answers it; the
	// action stands at it.
	StepFailed
)

// Step is what a point's hooks ask for next.
type Step struct {
	Kind StepKind
	// Hook is the hook to run or the failed one; nil with StepDone.
	Hook *v1alpha1.Hook
	// Attempt is the attempt to run, or the one that failed.
	Attempt int32
	// Run is the recorded run of Hook for the action, when there is one.
	Run *v1alpha1.HookRun
	// PassOver is set when a person's Continue decision answers Run: the caller records it
	// PassedOver and asks again.
	PassOver bool
}

// OfPoints returns the recipe's hooks at the points, in the recipe's order.
func OfPoints(spec *v1alpha1.DRRecipeSpec, points ...v1alpha1.HookPoint) []*v1alpha1.Hook {
	var out []*v1alpha1.Hook
	for i := range spec.Hooks {
		if slices.Contains(points, spec.Hooks[i].Point) {
			out = append(out, &spec.Hooks[i])
		}
	}
	return out
}

// Next says what the hooks ask for next, given the runs recorded for the action (runs of
// another action count as none) and the decisions. Hooks run one after another in order.
func Next(hooks []*v1alpha1.Hook, runs []v1alpha1.HookRun, action string, decisions []v1alpha1.HookDecision) Step {
	for _, h := range hooks {
		run := FindRun(runs, h.Name, action)
		if run == nil {
			return Step{Kind: StepRun, Hook: h, Attempt: 1}
		}
		switch run.Result {
		case v1alpha1.HookSucceeded, v1alpha1.HookContinued, v1alpha1.HookPassedOver:
			continue
		case v1alpha1.HookRunning:
			return Step{Kind: StepRun, Hook: h, Attempt: run.Attempt, Run: run}
		}
		// Failed: only a decision naming this very attempt answers it.
		d := findDecision(decisions, h.Name, run.Attempt)
		switch {
		case d == nil:
			return Step{Kind: StepFailed, Hook: h, Attempt: run.Attempt, Run: run}
		case d.Decision == v1alpha1.HookRetry:
			return Step{Kind: StepRun, Hook: h, Attempt: run.Attempt + 1}
		default:
			return Step{Kind: StepFailed, Hook: h, Attempt: run.Attempt, Run: run, PassOver: true}
		}
	}
	return Step{Kind: StepDone}
}

// FindRun returns the recorded run of the hook for the action, or nil.
func FindRun(runs []v1alpha1.HookRun, hook, action string) *v1alpha1.HookRun {
	for i := range runs {
		if runs[i].Name == hook && runs[i].Action == action {
			return &runs[i]
		}
	}
	return nil
}

func findDecision(decisions []v1alpha1.HookDecision, hook string, attempt int32) *v1alpha1.HookDecision {
	for i := range decisions {
		if decisions[i].Hook == hook && decisions[i].Attempt == attempt {
			return &decisions[i]
		}
	}
	return nil
}

// StopOrder returns the recipe's BeforeStop hooks in the order a relocation's source runs them
// before it stops the workload: those of no group first, in the recipe's order, then each
// group's, the groups in the reverse of their order (the order they stop in), each group's
// hooks in the recipe's order.
func StopOrder(spec *v1alpha1.DRRecipeSpec) []*v1alpha1.Hook {
	hooks := OfPoints(spec, v1alpha1.HookBeforeStop)
	var out []*v1alpha1.Hook
	for _, h := range hooks {
		if h.Group == "" {
			out = append(out, h)
		}
	}
	for i := len(spec.Groups) - 1; i >= 0; i-- {
		for _, h := range hooks {
			if h.Group == spec.Groups[i].Name {
				out = append(out, h)
			}
		}
	}
	return out
}

// OfGroup returns the recipe's hooks at point tied to group, in the recipe's order; group ""
// returns those tied to no group.
func OfGroup(spec *v1alpha1.DRRecipeSpec, point v1alpha1.HookPoint, group string) []*v1alpha1.Hook {
	var out []*v1alpha1.Hook
	for _, h := range OfPoints(spec, point) {
		if h.Group == group {
			out = append(out, h)
		}
	}
	return out
}
