package volsync

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// Who VolSync's movers run as (backube/volsync docs/usage/permissionmodel.rst,
// internal/controller/mover/rsynctls/mover.go). An unprivileged rsync-tls mover drops every
// capability and runs as its pod's user: the moverSecurityContext's runAsUser, or on a platform
// that assigns none (anything but OpenShift) its image's, root; root without capabilities is a
// case rsync cannot work in. VolSync puts moverSecurityContext on the mover pod as it is and adds
// no runAsNonRoot and no seccomp profile, so a namespace enforcing the restricted Pod Security
// Standard refuses a mover pod unless the context says both.
//
// So drover gives every ReplicationSource and ReplicationDestination it makes a
// moverSecurityContext: for unprivileged movers, the PVC's user (moverSecurityContext of the
// agent's resolution: the group's, from the DRPlacementControl, or the pods that mount the PVC)
// with runAsNonRoot and the RuntimeDefault seccomp profile, which with VolSync's own container
// settings (no privilege escalation, capabilities dropped) meets the restricted standard; with no
// user known it makes no mover at all and says what to set, rather than a mover that fails at
// every sync. Privileged movers run as root with capabilities by VolSync's choice (the namespace
// annotation, volsync_movers.go in the agent): they get the seccomp profile only, since
// runAsNonRoot would make the kubelet refuse their root container.

// moverPodSecurityContext is the moverSecurityContext of the group's movers of a PVC whose user
// is id; false when unprivileged movers have no user.
func moverPodSecurityContext(vrg *v1alpha1.VolumeReplicationGroup, id *v1alpha1.VolSyncMoverSecurityContext) (*corev1.PodSecurityContext, bool) {
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if vrg.Spec.VolSync != nil && vrg.Spec.VolSync.Movers == v1alpha1.VolSyncMoversPrivileged {
		return &corev1.PodSecurityContext{SeccompProfile: seccomp}, true
	}
	if id == nil || id.RunAsUser <= 0 {
		return nil, false
	}
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(id.RunAsUser),
		RunAsGroup:     id.RunAsGroup,
		FSGroup:        id.FSGroup,
		SeccompProfile: seccomp,
	}, true
}

// moverUserUnknown is the Result of a PVC whose unprivileged movers have no user: drover makes
// none, and says why and what to set.
func moverUserUnknown(pvcKey, why string) replication.Result {
	if why == "" {
		why = "no user is known for it"
	}
	return replication.Retry(waitForHub, v1alpha1.ReasonVolSyncMoverUserUnknown, fmt.Sprintf(
		"the VolSync movers of PVC %s would run as UID 0 without capabilities, which rsync cannot, so drover starts none: %s; set the DRPlacementControl's spec.volSyncMoverSecurityContext to the user the application writes its files as, run the application's pods with a non-root runAsUser, or set the DRPolicy's spec.volSyncMovers to Privileged",
		pvcKey, why))
}

// destinationMoverUser is who the movers of a received PVC run as: the group's own user (from
// the DRPlacementControl), else the one the primary reported for the PVC.
func destinationMoverUser(vrg *v1alpha1.VolumeReplicationGroup, rp v1alpha1.VolSyncReceivePVC) *v1alpha1.VolSyncMoverSecurityContext {
	if vrg.Spec.VolSync != nil && vrg.Spec.VolSync.MoverSecurityContext != nil {
		return vrg.Spec.VolSync.MoverSecurityContext
	}
	return rp.MoverSecurityContext
}
