// Package drillcheck holds the bounds of a DR drill's check Job, one set of rules read by the
// three places that judge it: `drover drill` before it asks (a usage error), the hub before it
// accepts a DRDrill (Refused, reason CheckNotAllowed) and the agent before it creates the Job in
// the sandbox (the drill fails, naming what is wrong). The release manifests hold the same
// bounds as ValidatingAdmissionPolicies: drover-drill-check on the hub (DRDrills) and
// drover-drill-sandbox on every managed cluster (the check Job, and every pod of a sandbox,
// whoever creates it: the Job controller, not the agent, creates the check's pods).
//
// A check is a Job's spec that a tenant writes and the target cluster runs beside the
// application's secondary: it may not run a pod the sandbox's Pod Security level refuses
// (internal/podsecurity: never privileged, host namespaces or hostPath, whatever the level), nor
// more pods, retries or time than a check needs.
package drillcheck

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/pod-security-admission/api"

	"github.com/drover-io/drover/internal/podsecurity"
)

// Bounds of a check Job. The admission policies in config/ hold the same numbers.
const (
	// MaxParallelism and MaxCompletions bound how many pods a check runs at once and in all.
	MaxParallelism = 4
	MaxCompletions = 4
	// MaxBackoffLimit bounds its retries (Kubernetes' default is 6), per index too.
	MaxBackoffLimit = 6
	// MaxDeadlineSeconds bounds activeDeadlineSeconds: a day, the longest a drill may run.
	MaxDeadlineSeconds = 24 * 60 * 60
	// DefaultDeadlineSeconds is the deadline the agent gives a check that sets none (the hub
	// gives it the drill's timeout first): the default timeout of a drill, 30 minutes.
	DefaultDeadlineSeconds = 30 * 60
)

// Problems says what is wrong with a check Job's spec for a sandbox whose level is level: each
// bound it passes and each reason its pod template would be refused. Empty when it may run.
func Problems(spec *batchv1.JobSpec, level api.Level) []string {
	var out []string
	bound := func(field string, v *int32, most int32) {
		if v != nil && (*v < 0 || *v > most) {
			out = append(out, fmt.Sprintf("%s %d is out of range: at most %d", field, *v, most))
		}
	}
	bound("parallelism", spec.Parallelism, MaxParallelism)
	bound("completions", spec.Completions, MaxCompletions)
	bound("backoffLimit", spec.BackoffLimit, MaxBackoffLimit)
	bound("backoffLimitPerIndex", spec.BackoffLimitPerIndex, MaxBackoffLimit)
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d <= 0 || *d > MaxDeadlineSeconds) {
		out = append(out, fmt.Sprintf("activeDeadlineSeconds %d is out of range: from 1 to %d (a day)", *d, MaxDeadlineSeconds))
	}
	if spec.ManualSelector != nil && *spec.ManualSelector {
		out = append(out, "manualSelector is set: the check's pods are selected by the Job's own labels")
	}
	lv := api.LevelVersion{Level: podsecurity.Stricter(level, podsecurity.Floor), Version: api.LatestVersion()}
	if v := podsecurity.Violations(lv, &spec.Template.ObjectMeta, &spec.Template.Spec); v != "" {
		out = append(out, "its pod template "+v)
	}
	return out
}

// Message is Problems as one sentence that says what to do.
func Message(problems []string, level api.Level) string {
	return fmt.Sprintf("the check Job cannot run in the sandbox (Pod Security level %s): %s; "+
		"fix the check (a pod that meets the level, at most %d pods at once and %d in all, %d retries, a deadline of at most a day) and drill again",
		level, strings.Join(problems, "; "), MaxParallelism, MaxCompletions, MaxBackoffLimit)
}
