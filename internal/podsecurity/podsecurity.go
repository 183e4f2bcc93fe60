// Package podsecurity is drover's use of the Pod Security Standards: the level a namespace that
// drover makes or restores is labelled with, and whether a pod template would be admitted at a
// level. The checks are Kubernetes' own (k8s.io/pod-security-admission/policy, the code the API
// server's PodSecurity admission runs), so a template drover refuses is one the API server
// would refuse, with the same reasons.
//
// Why drover checks what the API server checks again: the API server's PodSecurity admission
// judges pods, not the Deployments, StatefulSets or Jobs that make them (for those it only
// warns). An editor of an application's namespace can create a Deployment whose pods that
// namespace refuses; a restore that created it on the peer, into a namespace with a lower level,
// would start them there. So a restore labels the namespace with the source's level, never
// below Floor, and refuses a template the level refuses, naming the object (internal/kubeobjects).
package podsecurity

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// The labels of a namespace that set the level the API server enforces there.
const (
	LabelEnforce        = api.EnforceLevelLabel
	LabelEnforceVersion = api.EnforceVersionLabel
)

// Levels of the Pod Security Standards, least strict first.
const (
	Privileged = api.LevelPrivileged
	Baseline   = api.LevelBaseline
	Restricted = api.LevelRestricted
)

// Floor is the lowest level of a namespace drover restores or makes, whatever a capture says: a
// capture is read from a store that whoever holds a store key can write, and baseline is the
// level that keeps a pod off its node's namespaces, devices and files (no privileged containers,
// host namespaces, hostPath volumes or added capabilities).
const Floor = Baseline

// rank orders the levels: the higher, the stricter. An unknown level ranks as privileged.
func rank(l api.Level) int {
	switch l {
	case Restricted:
		return 2
	case Baseline:
		return 1
	}
	return 0
}

// Stricter returns the stricter of two levels.
func Stricter(a, b api.Level) api.Level {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// ParseLevel parses a level as the API accepts it; an empty or unknown one is an error.
func ParseLevel(s string) (api.Level, error) {
	l, err := api.ParseLevel(s)
	if err != nil {
		return "", fmt.Errorf("pod security level %q %w", s, err)
	}
	return l, nil
}

// Enforced is the level and version a namespace's labels enforce: the enforce label's level
// (privileged when it is missing or not a level, as the API server's default) and the
// enforce-version label's version (latest when missing or not a version).
func Enforced(labels map[string]string) api.LevelVersion {
	lv := api.LevelVersion{Level: Privileged, Version: api.LatestVersion()}
	if l, err := api.ParseLevel(labels[LabelEnforce]); err == nil && labels[LabelEnforce] != "" {
		lv.Level = l
	}
	if v, ok := labels[LabelEnforceVersion]; ok {
		if parsed, err := api.ParseVersion(v); err == nil {
			lv.Version = parsed
		}
	}
	return lv
}

// Raise returns the labels of a namespace raised to at least level: when the enforce label is
// weaker (or missing), it is set to level and its version to latest; otherwise the labels are
// returned as they are. It reports whether it changed them. The other pod-security labels
// (audit, warn) are left as they are.
func Raise(labels map[string]string, level api.Level) (map[string]string, bool) {
	have := Enforced(labels)
	if rank(have.Level) >= rank(level) {
		return labels, false
	}
	out := make(map[string]string, len(labels)+2)
	for k, v := range labels {
		out[k] = v
	}
	out[LabelEnforce] = string(level)
	out[LabelEnforceVersion] = api.VersionLatest
	return out, true
}

// evaluator runs Kubernetes' own checks of the standards.
var evaluator = mustEvaluator()

func mustEvaluator() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("the Pod Security Standards' checks do not load: %v", err))
	}
	return e
}

// Violations says why a pod of this metadata and spec would be refused at lv, as the API server's
// PodSecurity admission says it (`violates PodSecurity "baseline:latest": privileged (container
// "app" must not set securityContext.privileged=true), ...`); empty when it would be admitted.
func Violations(lv api.LevelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) string {
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	agg := policy.AggregateCheckResults(evaluator.EvaluatePod(lv, meta, spec))
	if agg.Allowed {
		return ""
	}
	return fmt.Sprintf("violates PodSecurity %q: %s", lv.String(), agg.ForbiddenDetail())
}

// Describe names a level and version as a namespace's labels would set them.
func Describe(lv api.LevelVersion) string {
	return strings.TrimSuffix(lv.String(), ":"+api.VersionLatest)
}
