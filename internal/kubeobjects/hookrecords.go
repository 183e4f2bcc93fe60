package kubeobjects

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What drover's hooks (internal/agent/hooks) leave on the objects of a protected namespace, and
// what a capture makes of it (docs/hooks.md).

// LabelHook marks a hook's Job with the hook's name. A capture leaves such a Job out (Skip):
// it is the run of one hook on the cluster it ran on.
const LabelHook = "drover.io/hook"

// AnnotationScaledByHook is the record a scale hook leaves on the Deployment or StatefulSet it
// scales, in the same write as the new replicas: a ScaledByHook, in JSON. A capture stores the
// workload with the replicas it had before the hook and without the record (Clean), so a
// workload scaled down before a relocation's final capture (clients drained before the database
// stops) runs on the target with its own replicas again.
const AnnotationScaledByHook = "drover.io/scaled-by-hook"

// ScaledByHook is the record of AnnotationScaledByHook.
type ScaledByHook struct {
	// Hook is the scale hook that wrote the record last.
	Hook string `json:"hook"`
	// Replicas are the workload's replicas before the first scale hook of a run of them changed
	// them.
	Replicas int32 `json:"replicas"`
	// Set are the replicas the last scale hook set.
	Set int32 `json:"set"`
}

// HookJob reports whether an object is a hook's Job: a Job that carries LabelHook.
func HookJob(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetLabels()[LabelHook]
	return ok && obj.GroupVersionKind().GroupKind() == KindJob
}

// ScaleRecord is the record a scale hook named hook writes on a workload whose spec has current
// replicas and which it scales to set. A record already there whose Set are still the workload's
// replicas (an earlier hook, or an earlier run of this one, scaled it and no one since) keeps
// its Replicas, the ones from before any hook; otherwise the hook found current.
func ScaleRecord(annotations map[string]string, hook string, current, set int32) string {
	before, ok := ReplicasBeforeHook(annotations, current)
	if !ok {
		before = current
	}
	body, _ := json.Marshal(ScaledByHook{Hook: hook, Replicas: before, Set: set}) // a struct of strings and ints
	return string(body)
}

// ReplicasBeforeHook reads a workload's AnnotationScaledByHook: the replicas it had before a
// scale hook changed them, when the workload still has the current replicas the hook set. A
// record that does not parse, or whose Set are not current (someone scaled the workload since
// the hook), says nothing: the workload's replicas are then the ones to keep.
func ReplicasBeforeHook(annotations map[string]string, current int32) (int32, bool) {
	v, ok := annotations[AnnotationScaledByHook]
	if !ok {
		return 0, false
	}
	var rec ScaledByHook
	if err := json.Unmarshal([]byte(v), &rec); err != nil || rec.Set != current || rec.Replicas < 0 {
		return 0, false
	}
	return rec.Replicas, true
}

// unscale puts back, in a cleaned Deployment or StatefulSet, the replicas it had before a scale
// hook changed them (ReplicasBeforeHook), and drops the hook's record: it means nothing on the
// cluster a restore creates the workload on.
func unscale(w *unstructured.Unstructured) {
	annotations := w.GetAnnotations()
	if _, ok := annotations[AnnotationScaledByHook]; !ok {
		return
	}
	// An unset spec.replicas is 1, as the API server defaults it.
	current, found, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if !found || err != nil {
		current = 1
	}
	if before, ok := ReplicasBeforeHook(annotations, int32(current)); ok { //nolint:gosec // replicas are int32 in the API
		_ = unstructured.SetNestedField(w.Object, int64(before), "spec", "replicas")
	}
	delete(annotations, AnnotationScaledByHook)
	if len(annotations) == 0 {
		annotations = nil
	}
	w.SetAnnotations(annotations)
}
