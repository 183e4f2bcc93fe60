package hooks

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;patch

// runScale sets the workload's replicas, recording the ones it had before
// (kubeobjects.AnnotationScaledByHook), and waits until that many are Ready, or, for zero,
// until its pods are gone.
func (r *Runner) runScale(ctx context.Context, h *v1alpha1.Hook) Outcome {
	s := h.Scale
	if s.Replicas == nil {
		return failed("scale hook %s sets no replicas: fix the DRRecipe", h.Name)
	}
	n := *s.Replicas
	where := fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name)
	if err := r.scaleRecorded(ctx, h.Name, s, n); err != nil {
		return failed("failed to scale %s to %d: %v", where, n, err)
	}
	seen := ""
	err := poll(ctx, func() (bool, error) {
		ready, replicas, sel, err := r.workloadReplicas(ctx, s)
		if err != nil {
			return false, err
		}
		seen = fmt.Sprintf("%d replicas, %d Ready", replicas, ready)
		if n > 0 {
			return ready == n && replicas == n, nil
		}
		pods := &corev1.PodList{}
		if err := r.Reader.List(ctx, pods, client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		seen = fmt.Sprintf("%d pods left", len(pods.Items))
		return replicas == 0 && len(pods.Items) == 0, nil
	})
	if err != nil {
		return failed("%s did not reach %d replicas (last seen: %s): %v", where, n, seen, err)
	}
	return Outcome{Succeeded: true, Message: fmt.Sprintf("%s scaled to %d", where, n)}
}

// scaleRecorded sets the workload's replicas to n and, in the same patch, records the replicas it
// had before (kubeobjects.ScaleRecord), so that a capture taken while the hook holds it scaled
// stores its own replicas. The patch names the resourceVersion it read: a write in between
// makes it read again.
func (r *Runner) scaleRecorded(ctx context.Context, hook string, s *v1alpha1.ScaleHook, n int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var obj client.Object
		var replicas *int32
		key := client.ObjectKey{Namespace: s.Namespace, Name: s.Name}
		if s.Kind == v1alpha1.ScaleStatefulSet {
			sts := &appsv1.StatefulSet{}
			if err := r.Reader.Get(ctx, key, sts); err != nil {
				return err
			}
			obj, replicas = sts, sts.Spec.Replicas
		} else {
			d := &appsv1.Deployment{}
			if err := r.Reader.Get(ctx, key, d); err != nil {
				return err
			}
			obj, replicas = d, d.Spec.Replicas
		}
		record := kubeobjects.ScaleRecord(obj.GetAnnotations(), hook, ptr.Deref(replicas, 1), n)
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(),
				"annotations": map[string]string{kubeobjects.AnnotationScaledByHook: record}},
			"spec": map[string]any{"replicas": n},
		})
		if err != nil {
			return err
		}
		return r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	})
}

// workloadReplicas reads the workload's Ready and current replicas, as its controller has
// observed its spec, and its pod selector.
func (r *Runner) workloadReplicas(ctx context.Context, s *v1alpha1.ScaleHook) (int32, int32, labels.Selector, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Name}
	if s.Kind == v1alpha1.ScaleStatefulSet {
		sts := &appsv1.StatefulSet{}
		if err := r.Reader.Get(ctx, key, sts); err != nil {
			return 0, 0, nil, err
		}
		sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
		if sts.Status.ObservedGeneration < sts.Generation {
			return 0, -1, sel, err
		}
		return sts.Status.ReadyReplicas, sts.Status.Replicas, sel, err
	}
	d := &appsv1.Deployment{}
	if err := r.Reader.Get(ctx, key, d); err != nil {
		return 0, 0, nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if d.Status.ObservedGeneration < d.Generation {
		return 0, -1, sel, err
	}
	return d.Status.ReadyReplicas, d.Status.Replicas, sel, err
}
