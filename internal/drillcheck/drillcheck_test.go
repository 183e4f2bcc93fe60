package drillcheck

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/podsecurity"
)

// restricted is a check whose pod the restricted level admits.
func restricted() *batchv1.JobSpec {
	return &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "check", Image: "x", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}}}
}

func TestProblemsBoundTheCheckAndJudgeItsPodAtTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*batchv1.JobSpec)
		level  string
		want   []string
	}{
		{"a restricted check at restricted", func(*batchv1.JobSpec) {}, "restricted", nil},
		{"4 pods, 6 retries, a day", func(s *batchv1.JobSpec) {
			s.Parallelism, s.Completions, s.BackoffLimit, s.ActiveDeadlineSeconds = ptr.To[int32](4), ptr.To[int32](4), ptr.To[int32](6), ptr.To[int64](86400)
		}, "restricted", nil},
		{"5 pods at once", func(s *batchv1.JobSpec) { s.Parallelism = ptr.To[int32](5) }, "restricted", []string{"parallelism 5 is out of range: at most 4"}},
		{"5 completions and 7 retries per index", func(s *batchv1.JobSpec) {
			s.Completions, s.BackoffLimitPerIndex = ptr.To[int32](5), ptr.To[int32](7)
		}, "restricted", []string{"completions 5", "backoffLimitPerIndex 7"}},
		{"a deadline past a day, a manual selector", func(s *batchv1.JobSpec) {
			s.ActiveDeadlineSeconds, s.ManualSelector = ptr.To[int64](86401), ptr.To(true)
		}, "restricted", []string{"activeDeadlineSeconds 86401", "manualSelector"}},
		{"root at restricted", func(s *batchv1.JobSpec) { s.Template.Spec.SecurityContext = nil }, "restricted", []string{`violates PodSecurity "restricted:latest"`, "runAsNonRoot"}},
		{"root at baseline", func(s *batchv1.JobSpec) { s.Template.Spec.SecurityContext = nil }, "baseline", nil},
		{"the node's network at baseline", func(s *batchv1.JobSpec) { s.Template.Spec.HostNetwork = true }, "baseline", []string{`violates PodSecurity "baseline:latest": host namespaces`}},
		{"a level below the floor is the floor", func(s *batchv1.JobSpec) { s.Template.Spec.HostPID = true }, "privileged", []string{`"baseline:latest"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := restricted()
			tc.change(spec)
			level, _ := podsecurity.ParseLevel(tc.level)
			got := strings.Join(Problems(spec, level), "; ")
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("problems: %s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("problems %q lack %q", got, w)
				}
			}
		})
	}
}
