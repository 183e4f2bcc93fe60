package hooks

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list

// runScale sets the workload's replicas through its scale subresource and waits until that many
// are Ready, or, for zero, until its pods are gone.
func (r *Runner) runScale(ctx context.Context, h *v1alpha1.Hook) Outcome {
	s := h.Scale
	if s.Replicas == nil {
		return failed("scale hook %s sets no replicas: fix the DRRecipe", h.Name)
	}
	n := *s.Replicas
	var obj client.Object = &appsv1.Deployment{}
	if s.Kind == v1alpha1.ScaleStatefulSet {
		obj = &appsv1.StatefulSet{}
	}
	obj.SetNamespace(s.Namespace)
	obj.SetName(s.Name)
	where := fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name)
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := r.Client.SubResource("scale").Patch(ctx, obj, patch, client.WithSubResourceBody(&autoscalingv1.Scale{})); err != nil {
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
