package webhook

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

const (
	// LabelProtectedBy marks a protected PVC with the name of its VolumeReplicationGroup. It is
	// the VRG reconciler's label (internal/agent/vrg.LabelProtectedBy); the fence reads it and
	// repeats it here so that the reconciler can import this package.
	LabelProtectedBy = "drover.io/protected-by"

	// AnnotationFence on a VolumeReplicationGroup fences its PVCs while it is still primary:
	// the agent sets it (value FenceRelocate) before the relocation's last consumer check and
	// keeps it until the group is secondary.
	AnnotationFence = "drover.io/fence"
	// FenceRelocate is the value of AnnotationFence while a group is demoted for a relocation.
	FenceRelocate = "relocate"

	// LabelFenced on a namespace ("true") makes the API server call the fence for pods created
	// there. The agent sets it only while a group protecting PVCs in the namespace is demoting
	// or secondary.
	LabelFenced = "drover.io/fenced"
)

// NeverFenced are the namespaces the fence's namespaceSelector leaves out whatever their labels
// say: the control plane's and drover's own, so that no label, set by mistake or by an attacker
// with rights on Namespaces, makes the cluster's system pods wait for the agent. The agent never
// fences a system namespace in the first place (internal/tenancy refuses groups there, which
// covers openshift-* too: a selector cannot match a prefix).
var NeverFenced = []string{"kube-system", "kube-public", "kube-node-lease", "drover-system"}

// Reason says why a PVC is fenced.
type Reason string

const (
	// ReasonDemoting means the group carries AnnotationFence; it is being demoted for a relocation.
	ReasonDemoting Reason = "Demoting"
	// ReasonSecondary means the group's spec.replicationState is secondary: the peer is primary.
	ReasonSecondary Reason = "Secondary"
)

// Fence names the group that fences a PVC and why.
type Fence struct {
	// VRG is the fencing VolumeReplicationGroup.
	VRG types.NamespacedName
	// Reason says why it fences.
	Reason Reason
}

// Fences decides whether a PVC may be mounted by a new pod. The VRG reconciler may implement it
// from its own state; ClusterFences reads it from the cluster.
//
// FencedBy must be safe for concurrent use and must not return a stale "not fenced" once the
// agent has fenced the PVC's group and seen that fence in the API server (read uncached, or
// from a view at least as new). A nil Fence with a nil error means the PVC is not fenced,
// including when it does not exist. An error means the state could not be read; the handler
// then refuses the pod.
type Fences interface {
	FencedBy(ctx context.Context, namespace, pvc string) (*Fence, error)
}

// ClusterFences reads fences from the API server: a PVC is fenced when a VolumeReplicationGroup
// that is secondary or carries AnnotationFence=relocate protects it. The group is the one its
// label drover.io/protected-by names (in the PVC's namespace, or one that lists the namespace in
// spec.protectedNamespaces), or any group covering the namespace whose status.protectedPVCs
// lists it: the label is on an object any editor of the namespace (or a GitOps tool replacing
// the PVC) may change, the group's status is written by the agent alone, so removing the label
// does not lift the fence.
type ClusterFences struct {
	// Reader should be uncached (a manager's APIReader): the agent fences a group and then
	// re-checks the consumers; a cache that has not seen the fence yet would admit a pod in
	// between.
	Reader client.Reader
}

var _ Fences = ClusterFences{}

// FencedBy implements Fences.
func (f ClusterFences) FencedBy(ctx context.Context, namespace, pvcName string) (*Fence, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pvcName}, pvc)
	if apierrors.IsNotFound(err) {
		// A PVC that does not exist yet is protected by no group; the pod waits for it.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get PVC %s/%s: %w", namespace, pvcName, err)
	}
	if group := pvc.Labels[LabelProtectedBy]; group != "" {
		vrg, err := f.group(ctx, namespace, group)
		if err != nil {
			return nil, err
		}
		if fence := fenceOf(vrg); fence != nil {
			return fence, nil
		}
	}
	return f.byStatus(ctx, namespace, pvcName)
}

// fenceOf is the fence a group sets on the PVCs it protects, or nil.
func fenceOf(vrg *v1alpha1.VolumeReplicationGroup) *Fence {
	if vrg == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: vrg.Namespace, Name: vrg.Name}
	switch {
	case vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary:
		return &Fence{VRG: key, Reason: ReasonSecondary}
	case vrg.Annotations[AnnotationFence] == FenceRelocate:
		return &Fence{VRG: key, Reason: ReasonDemoting}
	}
	return nil
}

// byStatus finds a fencing group covering namespace whose status lists the PVC as protected.
func (f ClusterFences) byStatus(ctx context.Context, namespace, pvcName string) (*Fence, error) {
	list := &v1alpha1.VolumeReplicationGroupList{}
	if err := f.Reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list VolumeReplicationGroups: %w", err)
	}
	for i := range list.Items {
		v := &list.Items[i]
		covers := slices.Contains(v.Spec.ProtectedNamespaces, namespace) || (len(v.Spec.ProtectedNamespaces) == 0 && v.Namespace == namespace)
		fence := fenceOf(v)
		if !covers || fence == nil {
			continue
		}
		for _, p := range v.Status.ProtectedPVCs {
			if (p.Namespace == namespace || p.Namespace == "" && v.Namespace == namespace) && p.Name == pvcName {
				return fence, nil
			}
		}
	}
	return nil, nil
}

// group finds the VolumeReplicationGroup named name that protects PVCs of namespace: the one in
// the namespace itself, else one elsewhere that lists the namespace in protectedNamespaces. A
// label naming no such group (a group deleted while its label stayed) fences nothing.
func (f ClusterFences) group(ctx context.Context, namespace, name string) (*v1alpha1.VolumeReplicationGroup, error) {
	vrg := &v1alpha1.VolumeReplicationGroup{}
	err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, vrg)
	switch {
	case err == nil:
		return vrg, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get VolumeReplicationGroup %s/%s: %w", namespace, name, err)
	}
	list := &v1alpha1.VolumeReplicationGroupList{}
	if err := f.Reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list VolumeReplicationGroups: %w", err)
	}
	for i := range list.Items {
		if v := &list.Items[i]; v.Name == name && slices.Contains(v.Spec.ProtectedNamespaces, namespace) {
			return v, nil
		}
	}
	return nil, nil
}
