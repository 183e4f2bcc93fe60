package podsecurity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
)

func TestStricterAndEnforced(t *testing.T) {
	for _, tc := range []struct{ a, b, want api.Level }{
		{Privileged, Baseline, Baseline}, {Restricted, Baseline, Restricted}, {Baseline, Baseline, Baseline}, {"nonsense", Privileged, "nonsense"},
	} {
		if got := Stricter(tc.a, tc.b); got != tc.want {
			t.Errorf("Stricter(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
	for labels, want := range map[string]string{
		"":                                  "privileged:latest",
		LabelEnforce + "=baseline":          "baseline:latest",
		LabelEnforce + "=nonsense":          "privileged:latest",
		LabelEnforce + "=restricted,v=v1.2": "restricted:latest",
	} {
		m := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		if got := Enforced(m).String(); got != want {
			t.Errorf("Enforced(%v) = %s, want %s", m, got, want)
		}
	}
	if got := Enforced(map[string]string{LabelEnforce: "baseline", LabelEnforceVersion: "v1.25"}).String(); got != "baseline:v1.25" {
		t.Errorf("a versioned label: %s", got)
	}
}

func TestRaiseNeverLowers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		level   api.Level
		want    string
		changed bool
	}{
		{"an unlabelled namespace is raised", nil, Baseline, "baseline", true},
		{"a privileged one is raised", map[string]string{LabelEnforce: "privileged", LabelEnforceVersion: "v1.20"}, Baseline, "baseline", true},
		{"a restricted one stays", map[string]string{LabelEnforce: "restricted"}, Baseline, "restricted", false},
		{"an equal one stays", map[string]string{LabelEnforce: "baseline", LabelEnforceVersion: "v1.25"}, Baseline, "baseline", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Raise(tc.labels, tc.level)
			if got[LabelEnforce] != tc.want || changed != tc.changed {
				t.Fatalf("Raise(%v, %s) = %v, %t", tc.labels, tc.level, got, changed)
			}
			if changed && got[LabelEnforceVersion] != api.VersionLatest {
				t.Fatalf("a raised level is enforced at the latest version: %v", got)
			}
		})
	}
}

func TestTemplateViolationsOfEveryKindThatRunsPods(t *testing.T) {
	root := corev1.PodSpec{HostPID: true, Containers: []corev1.Container{{Name: "c", Image: "x", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{Spec: root})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Pod{Spec: root})
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]any{
		"apps/v1 Deployment":  {"spec": map[string]any{"template": tmpl}},
		"apps/v1 StatefulSet": {"spec": map[string]any{"template": tmpl}},
		"apps/v1 DaemonSet":   {"spec": map[string]any{"template": tmpl}},
		"apps/v1 ReplicaSet":  {"spec": map[string]any{"template": tmpl}},
		"batch/v1 Job":        {"spec": map[string]any{"template": tmpl}},
		"batch/v1 CronJob":    {"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": tmpl}}}},
		"v1 Pod":              pod,
	}
	baseline := api.LevelVersion{Level: Baseline, Version: api.LatestVersion()}
	for kind, obj := range objects {
		gv, k, _ := strings.Cut(kind, " ")
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion(gv)
		u.SetKind(k)
		got := TemplateViolations(u, baseline)
		if !strings.Contains(got, `violates PodSecurity "baseline:latest"`) || !strings.Contains(got, "privileged") || !strings.Contains(got, "host namespaces") {
			t.Errorf("%s: %q", kind, got)
		}
		if got := TemplateViolations(u, api.LevelVersion{Level: Privileged, Version: api.LatestVersion()}); got != "" {
			t.Errorf("%s at privileged: %q", kind, got)
		}
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	if got := TemplateViolations(cm, baseline); got != "" {
		t.Errorf("a ConfigMap runs no pod: %q", got)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"template": "root"}}}
	if got := TemplateViolations(bad, baseline); !strings.Contains(got, "pod template") {
		t.Errorf("a template that is not an object: %q", got)
	}
	odd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"hostPID": "yes"}}}}}
	if got := TemplateViolations(odd, baseline); !strings.Contains(got, "does not decode") {
		t.Errorf("a template that does not decode: %q", got)
	}
}
