package podsecurity

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/pod-security-admission/api"
)

// templatePaths are where Kubernetes' kinds that run pods hold their pod template: the pod's
// metadata and spec, as fields of the object. A Pod is its own template.
var templatePaths = map[schema.GroupKind][]string{
	{Kind: "Pod"}:                             nil,
	{Kind: "PodTemplate"}:                     {"template"},
	{Kind: "ReplicationController"}:           {"spec", "template"},
	{Group: "apps", Kind: "Deployment"}:       {"spec", "template"},
	{Group: "apps", Kind: "StatefulSet"}:      {"spec", "template"},
	{Group: "apps", Kind: "DaemonSet"}:        {"spec", "template"},
	{Group: "apps", Kind: "ReplicaSet"}:       {"spec", "template"},
	{Group: "batch", Kind: "Job"}:             {"spec", "template"},
	{Group: "batch", Kind: "CronJob"}:         {"spec", "jobTemplate", "spec", "template"},
	{Group: "extensions", Kind: "Deployment"}: {"spec", "template"},
	{Group: "extensions", Kind: "DaemonSet"}:  {"spec", "template"},
	{Group: "extensions", Kind: "ReplicaSet"}: {"spec", "template"},
}

// HasPodTemplate reports whether objects of a kind run pods from a template drover checks.
func HasPodTemplate(gk schema.GroupKind) bool {
	_, ok := templatePaths[gk]
	return ok
}

// PodTemplate returns the pod template of an object of a kind that runs pods (HasPodTemplate);
// false for other kinds. An object whose template does not decode is an error: it cannot be
// judged, so it must not be created.
func PodTemplate(obj *unstructured.Unstructured) (*corev1.PodTemplateSpec, bool, error) {
	gk := obj.GroupVersionKind().GroupKind()
	if !HasPodTemplate(gk) {
		return nil, false, nil
	}
	tmpl := &corev1.PodTemplateSpec{}
	raw := obj.Object
	if path := templatePaths[gk]; path != nil {
		m, found, err := unstructured.NestedMap(obj.Object, path...)
		if err != nil {
			return nil, true, fmt.Errorf("its pod template (%v) is not an object: %w", path, err)
		}
		if !found {
			return tmpl, true, nil // the API server refuses it for want of a template
		}
		raw = m
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, tmpl); err != nil {
		return nil, true, fmt.Errorf("its pod template does not decode: %w", err)
	}
	return tmpl, true, nil
}

// TemplateViolations says why the pods of obj would be refused at lv ("" when they would be
// admitted, or obj runs no pods): the PodSecurity reasons, or why its template cannot be read.
func TemplateViolations(obj *unstructured.Unstructured, lv api.LevelVersion) string {
	tmpl, ok, err := PodTemplate(obj)
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return ""
	}
	return Violations(lv, &tmpl.ObjectMeta, &tmpl.Spec)
}
