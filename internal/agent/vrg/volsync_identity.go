package vrg

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// Who a PVC's VolSync movers run as (internal/replication/volsync/movers.go says why it must be
// known). In order:
//   - the group's spec.volSync.moverSecurityContext, the DRPlacementControl's choice;
//   - what the pods that mount the PVC run as, when that is safe (moverUserFromPods);
//   - while no pod mounts it: what the group recorded for the PVC in status.protectedPVCs (a
//     relocation's final sync runs with the workload stopped), else the user of the group's
//     ReplicationDestination of the PVC, the one a promotion restored it from (its movers ran
//     as the old primary's user, and the restored PVC holds that user's files until the
//     application's pods run).
//
// A secondary's destination takes the user the primary reported for the PVC, which the hub
// hands over in spec.volSync.receivePVCs.

// moverUserFromPods derives the movers' user of a PVC from the pods that mount it. It is safe
// only when every container of those pods that mounts the PVC (init containers too) runs as one
// and the same non-root runAsUser (its own, else its pod's), and the pods agree on runAsGroup
// and fsGroup: every file the application wrote then belongs to that user (or to the fsGroup,
// which the mover gets too), so a mover running so reads all of it on the primary and, on the
// secondary, writes files the application will own when it starts there. It is not safe, and
// the second result says why, when a container states no runAsUser (it runs as its image's user,
// which the API does not tell: often root), runs as root (the case rsync cannot work in), or
// the pods write as different users (a mover as one of them may not read the others' files).
// Pods that ended (Succeeded, Failed) are not counted.
func moverUserFromPods(pods []corev1.Pod, claim string) (*v1alpha1.VolSyncMoverSecurityContext, string) {
	var user *v1alpha1.VolSyncMoverSecurityContext
	var first string
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		volumes := claimVolumes(pod, claim)
		if len(volumes) == 0 {
			continue
		}
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(volumes, m.Name) }) {
				continue
			}
			who := fmt.Sprintf("container %s of pod %s", c.Name, pod.Name)
			this, why := containerUser(pod, &c)
			switch {
			case this == nil:
				return nil, who + " " + why
			case user == nil:
				user, first = this, who
			case !equality.Semantic.DeepEqual(user, this):
				return nil, fmt.Sprintf("%s and %s write it as different users (%s, %s)", first, who, describeUser(user), describeUser(this))
			}
		}
	}
	if user == nil {
		return nil, "no running pod mounts it, so its user cannot be taken from the application's pods"
	}
	return user, ""
}

// claimVolumes names a pod's volumes that mount the claim.
func claimVolumes(pod *corev1.Pod, claim string) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			names = append(names, v.Name)
		}
	}
	return names
}

// containerUser is who a container runs as (its security context, else its pod's), or why that
// cannot be a mover's user.
func containerUser(pod *corev1.Pod, c *corev1.Container) (*v1alpha1.VolSyncMoverSecurityContext, string) {
	var uid, gid *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if csc := c.SecurityContext; csc != nil {
		uid, gid = cmpOr(csc.RunAsUser, uid), cmpOr(csc.RunAsGroup, gid)
	}
	switch {
	case uid == nil:
		return nil, "states no runAsUser: it runs as its image's user, which drover cannot know"
	case *uid == 0:
		return nil, "runs as root"
	}
	user := &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: *uid, RunAsGroup: gid}
	if psc := pod.Spec.SecurityContext; psc != nil {
		user.FSGroup = psc.FSGroup
	}
	return user, ""
}

// cmpOr is a, else b.
func cmpOr(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

// describeUser says who a mover security context is, as id(1) would.
func describeUser(u *v1alpha1.VolSyncMoverSecurityContext) string {
	s := fmt.Sprintf("uid %d", u.RunAsUser)
	if u.RunAsGroup != nil {
		s += fmt.Sprintf(" gid %d", *u.RunAsGroup)
	}
	if u.FSGroup != nil {
		s += fmt.Sprintf(" fsGroup %d", *u.FSGroup)
	}
	return s
}

// recordedMoverUser is the movers' user the group recorded for a PVC in its status; nil when
// none.
func recordedMoverUser(vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) *v1alpha1.VolSyncMoverSecurityContext {
	for _, p := range vrg.Status.ProtectedPVCs {
		if p.Namespace == namespace && p.Name == name && p.MoverSecurityContext != nil {
			return p.MoverSecurityContext.DeepCopy()
		}
	}
	return nil
}

// groupMoverUser is the group's own movers' user, else the one it recorded for the PVC: what a
// pass that does not look at pods (a demotion, a final sync) gives the backend.
func groupMoverUser(vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) *v1alpha1.VolSyncMoverSecurityContext {
	if vs := vrg.Spec.VolSync; vs != nil && vs.MoverSecurityContext != nil {
		return vs.MoverSecurityContext.DeepCopy()
	}
	return recordedMoverUser(vrg, namespace, name)
}

// moverUser resolves who a PVC's VolSync movers run as, and why no one when it is nil.
func (r *Reconciler) moverUser(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, pvc *corev1.PersistentVolumeClaim) (*v1alpha1.VolSyncMoverSecurityContext, string, error) {
	if vs := vrg.Spec.VolSync; vs != nil && vs.MoverSecurityContext != nil {
		return vs.MoverSecurityContext.DeepCopy(), "", nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pvc.Namespace), client.MatchingFields{indexPodPVC: pvc.Name}); err != nil {
		return nil, "", fmt.Errorf("failed to list the pods of PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	user, why := moverUserFromPods(pods.Items, pvc.Name)
	if user != nil {
		return user, "", nil
	}
	if slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool {
		return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	}) {
		return nil, why, nil
	}
	if recorded := recordedMoverUser(vrg, pvc.Namespace, pvc.Name); recorded != nil {
		return recorded, "", nil
	}
	if vs := r.volSync(); vs != nil {
		rd, err := vs.Destination(ctx, vrg, pvc.Namespace, pvc.Name)
		if err != nil {
			return nil, "", err
		}
		if user := destinationUser(rd); user != nil {
			return user, "", nil
		}
	}
	return nil, why, nil
}

// destinationUser is the non-root user a ReplicationDestination's movers run as; nil when none.
func destinationUser(rd *volsyncv1alpha1.ReplicationDestination) *v1alpha1.VolSyncMoverSecurityContext {
	if rd == nil || rd.Spec.RsyncTLS == nil || rd.Spec.RsyncTLS.MoverSecurityContext == nil {
		return nil
	}
	msc := rd.Spec.RsyncTLS.MoverSecurityContext
	if msc.RunAsUser == nil || *msc.RunAsUser <= 0 {
		return nil
	}
	return &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: *msc.RunAsUser, RunAsGroup: msc.RunAsGroup, FSGroup: msc.FSGroup}
}
