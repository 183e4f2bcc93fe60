package vrg

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The namespace floor: the administrator's bound on every namespace the agent restores an
// application into (a failover or a relocation), whatever the capture holds. A capture is
// written by the primary's agent, and a store is writable by whoever holds its key: its
// ResourceQuotas and LimitRanges (restored when includedKinds names them) are the source's
// word, and a forged capture holds none. The floor is the agent's own: a ResourceQuota and a
// LimitRange named FloorName, made from the agent's flags, created in each protected namespace
// before its PVCs and objects are restored, and kept to the flags' spec (a captured object of
// that name is overwritten). The API server enforces every ResourceQuota of a namespace and
// every LimitRange's bounds, so a captured quota can only add to the floor, never lift it. The
// restore is complete (ClusterDataReady), and the objects are restored, only once the floor's
// quota is counted: the API server admits anything in a namespace whose quota the quota
// controller has not counted yet.

// The agent patches a floor object that exists under the floor's name.
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;patch

// FloorName names the ResourceQuota and the LimitRange of the namespace floor.
const FloorName = "drover-floor"

// LabelFloor marks the floor's objects.
const LabelFloor = "drover.io/floor"

// NamespaceFloor is the administrator's floor (`drover agent --restore-quota` and
// `--restore-default-request`). The zero value is no floor: the restored namespaces hold what
// the capture holds, as before the floor existed.
type NamespaceFloor struct {
	// Quota is the hard limits of the ResourceQuota; empty: none.
	Quota corev1.ResourceList
	// DefaultRequest is what a container that requests nothing requests (the LimitRange's
	// defaultRequest), so that a quota of requests admits its pod; empty: no LimitRange.
	DefaultRequest corev1.ResourceList
}

// IsZero reports whether there is no floor.
func (f NamespaceFloor) IsZero() bool { return len(f.Quota) == 0 && len(f.DefaultRequest) == 0 }

// objects are the floor's objects in namespace ns: the ResourceQuota, then the LimitRange, each
// only when configured.
func (f NamespaceFloor) objects(ns string) []client.Object {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: FloorName, Labels: map[string]string{LabelFloor: "true"}}
	}
	var out []client.Object
	if len(f.Quota) > 0 {
		out = append(out, &corev1.ResourceQuota{ObjectMeta: meta(), Spec: corev1.ResourceQuotaSpec{Hard: f.Quota.DeepCopy()}})
	}
	if len(f.DefaultRequest) > 0 {
		out = append(out, &corev1.LimitRange{ObjectMeta: meta(), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, DefaultRequest: f.DefaultRequest.DeepCopy(),
		}}}})
	}
	return out
}

// applyFloor makes namespace ns hold the floor and returns what it still waits for: the quota
// to be counted with the floor's limits (empty when it is, or when there is no quota).
func (r *Reconciler) applyFloor(ctx context.Context, ns string) (string, error) {
	for _, want := range r.Floor.objects(ns) {
		if err := r.ensureFloorObject(ctx, want); err != nil {
			return "", err
		}
	}
	if len(r.Floor.Quota) == 0 {
		return "", nil
	}
	quota := &corev1.ResourceQuota{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: FloorName}, quota); err != nil {
		return "", fmt.Errorf("failed to get ResourceQuota %s/%s: %w", ns, FloorName, err)
	}
	if !equality.Semantic.DeepEqual(quota.Status.Hard, r.Floor.Quota) {
		return fmt.Sprintf("the ResourceQuota %s/%s to be counted", ns, FloorName), nil
	}
	return "", nil
}

// ensureFloorObject creates one object of the floor, or patches the one of that name to the
// floor's spec: the agent owns the name, whoever made the object (a capture restored before
// the floor was configured).
func (r *Reconciler) ensureFloorObject(ctx context.Context, want client.Object) error {
	err := r.Client.Create(ctx, want, client.FieldOwner(fieldOwner))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("failed to create %T %s/%s: %w", want, want.GetNamespace(), want.GetName(), err)
		}
		return nil
	}
	key := client.ObjectKeyFromObject(want)
	switch w := want.(type) {
	case *corev1.ResourceQuota:
		got := &corev1.ResourceQuota{}
		if err := r.APIReader.Get(ctx, key, got); err != nil {
			return fmt.Errorf("failed to get ResourceQuota %s: %w", key, err)
		}
		if equality.Semantic.DeepEqual(got.Spec, w.Spec) && got.Labels[LabelFloor] == "true" {
			return nil
		}
		before := got.DeepCopy()
		got.Spec = w.Spec
		metav1.SetMetaDataLabel(&got.ObjectMeta, LabelFloor, "true")
		return patchFloor(ctx, r.Client, got, before)
	case *corev1.LimitRange:
		got := &corev1.LimitRange{}
		if err := r.APIReader.Get(ctx, key, got); err != nil {
			return fmt.Errorf("failed to get LimitRange %s: %w", key, err)
		}
		if equality.Semantic.DeepEqual(got.Spec, w.Spec) && got.Labels[LabelFloor] == "true" {
			return nil
		}
		before := got.DeepCopy()
		got.Spec = w.Spec
		metav1.SetMetaDataLabel(&got.ObjectMeta, LabelFloor, "true")
		return patchFloor(ctx, r.Client, got, before)
	}
	return nil
}

func patchFloor(ctx context.Context, c client.Client, obj, before client.Object) error {
	if err := c.Patch(ctx, obj, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch %T %s/%s to the namespace floor: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
