package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// DefaultJobControllers are the users kube-controller-manager's Job controller creates pods as:
// its own ServiceAccount with per-controller credentials (kubeadm's default), or the manager's
// user without them.
var DefaultJobControllers = []string{"system:serviceaccount:kube-system:job-controller", "system:kube-controller-manager"}

// Movers decides whether a pod that mounts a fenced PVC is the VolSync mover drover asked for,
// which the fence admits: the mover of a secondary's ReplicationDestination writes the peer's
// data into the kept PVC (the fence would stop the replication it protects), and VolSync's
// source mover mounts the source PVC itself with copyMethod Direct.
type Movers interface {
	// OwnMover reports whether pod, created by the request, is such a mover of pvc under fence;
	// why says what it lacks when it is not.
	OwnMover(ctx context.Context, req admission.Request, pod *corev1.Pod, pvc string, fence Fence) (ok bool, why string, err error)
}

// ClusterMovers reads the pod's owners from the API server. A pod is drover's mover when all of
// these hold, each of which an editor of the namespace cannot fake alone:
//
//   - the request's user is the Job controller (JobControllers): only kube-controller-manager
//     creates pods as that user, and it creates them from a Job's template;
//   - the pod's controller is a Job of the namespace with that UID, named as VolSync names its
//     rsync-tls movers (volsync-rsync-tls-dst-... or -src-...);
//   - the Job's controller is a ReplicationDestination (or ReplicationSource) with that UID,
//     labelled by drover with the fencing group (drover.io/vrg-name, drover.io/vrg-namespace);
//   - that object moves exactly this PVC: the destination's spec.rsyncTLS.destinationPVC, or the
//     source's spec.sourcePVC with copyMethod Direct or None (with Snapshot or Clone VolSync's
//     mover mounts a temporary PVC, never the source);
//   - the pod runs as VolSync's ServiceAccount for it (volsync-dst-<name> or volsync-src-<name>).
//
// What remains is written down in docs/security.md ("The fence"): ownerReferences are not
// authenticated, so whoever may create Jobs in the namespace can make one claiming drover's
// destination as its controller, with a pod template of their own.
type ClusterMovers struct {
	// Reader should be uncached, as ClusterFences'.
	Reader client.Reader
	// JobControllers are the users the Job controller creates pods as; nil is
	// DefaultJobControllers.
	JobControllers []string
}

var _ Movers = ClusterMovers{}

// OwnMover implements Movers.
func (m ClusterMovers) OwnMover(ctx context.Context, req admission.Request, pod *corev1.Pod, pvc string, fence Fence) (bool, string, error) {
	controllers := m.JobControllers
	if controllers == nil {
		controllers = DefaultJobControllers
	}
	if !slices.Contains(controllers, req.UserInfo.Username) {
		return false, fmt.Sprintf("it was not created by the Job controller (%s) but by %s", strings.Join(controllers, " or "), req.UserInfo.Username), nil
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return false, "its controller is not a Job", nil
	}
	job := &batchv1.Job{}
	if err := m.Reader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, job); err != nil {
		return false, "", client.IgnoreNotFound(fmt.Errorf("failed to get Job %s/%s: %w", pod.Namespace, ref.Name, err))
	}
	if job.UID != ref.UID {
		return false, fmt.Sprintf("its Job %s is not the one it names", ref.Name), nil
	}
	owner := metav1.GetControllerOf(job)
	if owner == nil || owner.APIVersion != volsyncv1alpha1.GroupVersion.String() {
		return false, fmt.Sprintf("its Job %s is not controlled by a VolSync ReplicationDestination or ReplicationSource", job.Name), nil
	}
	moved, dir, why, err := m.movedPVC(ctx, pod.Namespace, owner, fence)
	if err != nil || why != "" {
		return false, why, err
	}
	switch {
	case moved != pvc:
		return false, fmt.Sprintf("its %s %s moves PVC %q, not %s", owner.Kind, owner.Name, moved, pvc), nil
	case !strings.HasPrefix(job.Name, "volsync-rsync-tls-"+dir+"-"):
		return false, fmt.Sprintf("its Job %s is not named as VolSync names its movers", job.Name), nil
	case pod.Spec.ServiceAccountName != "volsync-"+dir+"-"+owner.Name:
		return false, fmt.Sprintf("it does not run as VolSync's ServiceAccount volsync-%s-%s", dir, owner.Name), nil
	}
	return true, "", nil
}

// movedPVC reads the Job's controller and returns the PVC its mover mounts and its direction
// (dst or src); why says what disqualifies it.
func (m ClusterMovers) movedPVC(ctx context.Context, namespace string, owner *metav1.OwnerReference, fence Fence) (pvc, dir, why string, err error) {
	key := types.NamespacedName{Namespace: namespace, Name: owner.Name}
	var obj client.Object
	switch owner.Kind {
	case "ReplicationDestination":
		obj, dir = &volsyncv1alpha1.ReplicationDestination{}, "dst"
	case "ReplicationSource":
		obj, dir = &volsyncv1alpha1.ReplicationSource{}, "src"
	default:
		return "", "", fmt.Sprintf("its Job's controller is a %s", owner.Kind), nil
	}
	if err := m.Reader.Get(ctx, key, obj); err != nil {
		return "", "", "", client.IgnoreNotFound(fmt.Errorf("failed to get %s %s: %w", owner.Kind, key, err))
	}
	if obj.GetUID() != owner.UID {
		return "", "", fmt.Sprintf("its Job's %s %s is not the one it names", owner.Kind, owner.Name), nil
	}
	if l := obj.GetLabels(); l[volsync.LabelVRGName] != fence.VRG.Name || l[volsync.LabelVRGNamespace] != fence.VRG.Namespace {
		return "", "", fmt.Sprintf("its %s %s is not drover's for VolumeReplicationGroup %s", owner.Kind, owner.Name, fence.VRG), nil
	}
	switch o := obj.(type) {
	case *volsyncv1alpha1.ReplicationDestination:
		if o.Spec.RsyncTLS != nil && o.Spec.RsyncTLS.DestinationPVC != nil {
			pvc = *o.Spec.RsyncTLS.DestinationPVC
		}
	case *volsyncv1alpha1.ReplicationSource:
		if o.Spec.RsyncTLS != nil && (o.Spec.RsyncTLS.CopyMethod == volsyncv1alpha1.CopyMethodDirect || o.Spec.RsyncTLS.CopyMethod == volsyncv1alpha1.CopyMethodNone) {
			pvc = o.Spec.SourcePVC
		}
	}
	return pvc, dir, "", nil
}
