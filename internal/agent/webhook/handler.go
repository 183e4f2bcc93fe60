package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// PodFence is the admission handler: it refuses to create a pod that mounts a fenced PVC.
type PodFence struct {
	// Fences decides which PVCs are fenced.
	Fences Fences
	// Movers admits, on a fenced PVC, the VolSync mover pods of drover's own
	// ReplicationDestinations and ReplicationSources for that PVC; nil admits none.
	Movers Movers
}

var _ admission.Handler = (*PodFence)(nil)

// NewPodFence returns the handler over fences, admitting drover's own VolSync movers by movers.
func NewPodFence(fences Fences, movers Movers) *PodFence {
	return &PodFence{Fences: fences, Movers: movers}
}

// Handle implements admission.Handler. It admits everything but a pod CREATE, and refuses a pod
// when it cannot decide (the request cannot be decoded, or the fences cannot be read): the
// webhook is called only in fenced namespaces, where failing closed is the point.
func (h *PodFence) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := podDecoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("drover's fence could not read the pod, so it refuses it: %w", err))
	}
	// The API server fills in a generated name before validating admission; the request's
	// name is the fallback for a decoder that did not see it.
	if pod.Name == "" {
		pod.Name = req.Name
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	namespace := pod.Namespace
	for _, pvc := range ClaimNames(pod) {
		fence, err := h.Fences.FencedBy(ctx, namespace, pvc)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Refusing a pod because its PVC's fence could not be read",
				"namespace", namespace, "pod", pod.Name, "pvc", pvc)
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf(
				"drover could not tell whether PVC %s/%s is fenced, so it refuses the pod (the namespace is fenced "+
					"while a VolumeReplicationGroup in it is demoted or secondary); retry, and if it persists check "+
					"the drover agent: %w", namespace, pvc, err))
		}
		if fence == nil {
			continue
		}
		if admitted, resp := h.ownMover(ctx, req, pod, pvc, *fence); !admitted {
			return resp
		}
	}
	return admission.Allowed("")
}

// ownMover reports whether a pod mounting a fenced PVC is drover's own VolSync mover for it;
// when it is not, the response refuses the pod.
func (h *PodFence) ownMover(ctx context.Context, req admission.Request, pod *corev1.Pod, pvc string, fence Fence) (bool, admission.Response) {
	if h.Movers == nil {
		return false, admission.Denied(DeniedMessage(pod.Namespace, pvc, fence))
	}
	ok, why, err := h.Movers.OwnMover(ctx, req, pod, pvc, fence)
	switch {
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "Refusing a pod because its owners could not be read", "namespace", pod.Namespace, "pod", pod.Name, "pvc", pvc)
		return false, admission.Errored(http.StatusInternalServerError, fmt.Errorf(
			"drover could not tell whether the pod is VolSync's mover of the fenced PVC %s/%s, so it refuses it; retry: %w", pod.Namespace, pvc, err))
	case !ok:
		if pod.Labels["app.kubernetes.io/created-by"] == "volsync" {
			ctrl.LoggerFrom(ctx).Info("Refusing a pod that looks like a VolSync mover", "namespace", pod.Namespace, "pod", pod.Name, "pvc", pvc, "why", why)
		}
		return false, admission.Denied(DeniedMessage(pod.Namespace, pvc, fence))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Admitting drover's own VolSync mover on a fenced PVC", "namespace", pod.Namespace, "pod", pod.Name, "pvc", pvc, "fence", fence.VRG)
	return true, admission.Response{}
}

// DeniedMessage is what a person reads when the fence refuses a pod: which PVC, which group,
// why, and what to do.
func DeniedMessage(namespace, pvc string, f Fence) string {
	switch f.Reason {
	case ReasonDemoting:
		return fmt.Sprintf("VolumeReplicationGroup %s is being demoted for a relocation; pods may not mount its PVC %s "+
			"until the application runs again on this cluster (drover fences the volume so the final sync carries every write)",
			f.VRG, pvc)
	case ReasonSecondary:
		return fmt.Sprintf("VolumeReplicationGroup %s is secondary on this cluster, so its PVC %s receives replication "+
			"from the peer cluster and is not writable; pods may not mount it until the application is failed over or "+
			"relocated back to this cluster", f.VRG, pvc)
	}
	return fmt.Sprintf("VolumeReplicationGroup %s fences its PVC %s/%s (%s); pods may not mount it", f.VRG, namespace, pvc, f.Reason)
}

// ClaimNames lists the PVCs a pod mounts, once each, in the order of its volumes: those named
// by spec.volumes[].persistentVolumeClaim, and for a generic ephemeral volume the PVC the
// ephemeral-volume controller creates for it, <pod>-<volume>. An ephemeral PVC is new and
// owned by the pod, so it is normally protected by no group; it is checked anyway, because a
// group may select it and a pod of the same name may come back while it exists.
func ClaimNames(pod *corev1.Pod) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			add(v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil && pod.Name != "":
			add(pod.Name + "-" + v.Name)
		}
	}
	return out
}
