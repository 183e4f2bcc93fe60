package volsynclab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// restrictedNamespace labels a namespace of both clusters to enforce the restricted Pod
// Security Standard.
func restrictedNamespace(ctx context.Context, g Gomega, ns string, clients ...client.Client) {
	for _, cl := range clients {
		obj := &corev1.Namespace{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: ns}, obj)).To(Succeed())
		patch := client.MergeFrom(obj.DeepCopy())
		metav1.SetMetaDataLabel(&obj.ObjectMeta, "pod-security.kubernetes.io/enforce", "restricted")
		g.Expect(cl.Patch(ctx, obj, patch)).To(Succeed())
	}
}

// runOnePod gives the pair's StatefulSet db the pod template of sts and one replica.
func runOnePod(ctx context.Context, g Gomega, cl client.Client, sts *appsv1.StatefulSet) {
	g.Eventually(func(g Gomega) {
		got := &appsv1.StatefulSet{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(sts), got)).To(Succeed())
		got.Spec.Template, got.Spec.Replicas = *sts.Spec.Template.DeepCopy(), ptr.To[int32](1)
		g.Expect(cl.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}

// expectMoversOf checks the moverSecurityContext of a PVC's source on east and destination on
// west.
func expectMoversOf(ctx context.Context, g Gomega, p volSyncPair, ns, pvc string, want *corev1.PodSecurityContext) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(p.east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
	g.Expect(rs.Spec.RsyncTLS.MoverSecurityContext).To(Equal(want), "the source's movers")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.MoverSecurityContext).To(Equal(want), "the destination's movers")
}

// On a Kubernetes that assigns no UID (the lab's, like every platform but OpenShift), VolSync's
// unprivileged movers run as root without capabilities unless told a user, and rsync cannot work
// so; and VolSync's mover pods are refused in a namespace enforcing the restricted Pod Security
// Standard unless their security context says runAsNonRoot and a seccomp profile. drover takes
// the movers' user from the application's pods (here a StatefulSet running as uid 1000, fsGroup
// 2000, in a restricted namespace) and gives source and destination a restricted-compliant
// context: the PVC replicates. An application whose pods give no usable user (they state none)
// gets no mover: both groups say why and what to set, until the DRPlacementControl's user
// reaches the groups.
func TestVolSyncMoversRunAsTheApplicationsUserAndPassRestrictedPodSecurity(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()

	ns := "volsync-user"
	p := startVolSyncPair(t, g, ns, 0, nil)
	restrictedNamespace(ctx, g, ns, p.east, p.west)
	sts := fileStatefulSet(ns, "db", 1)
	sts.Spec.Template.Spec.SecurityContext.RunAsNonRoot = ptr.To(true)
	sts.Spec.Template.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	sts.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	runOnePod(ctx, g, p.east, sts)
	hubCopy(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(p.east.Get(ctx, client.ObjectKeyFromObject(p.eastGroup), got)).To(Succeed())
		dp := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dp.Reason, dp.Message)
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(1))
		g.Expect(got.Status.ProtectedPVCs[0].MoverSecurityContext).To(Equal(&v1alpha1.VolSyncMoverSecurityContext{
			RunAsUser: appUID, RunAsGroup: ptr.To(appUID), FSGroup: ptr.To(appFSGroup)}), "the movers' user is the pods'")
	}).Should(Succeed(), "east's PVC replicates to west in a restricted namespace")
	expectMoversOf(ctx, g, p, ns, "data-db-0", &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(appUID), RunAsGroup: ptr.To(appUID), FSGroup: ptr.To(appFSGroup),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	})

	// Pods that state no user: the movers have none.
	ns = "volsync-nouser"
	q := startVolSyncPair(t, g, ns, 0, nil)
	anonymous := fileStatefulSet(ns, "db", 1)
	anonymous.Spec.Template.Spec.SecurityContext = nil
	runOnePod(ctx, g, q.east, anonymous)
	hubReceive(ctx, g, q.east, q.eastGroup, q.west, q.westGroup, 1)
	for cluster, cl := range map[string]client.Client{lab.East: q.east, lab.West: q.west} {
		group := map[string]*v1alpha1.VolumeReplicationGroup{lab.East: q.eastGroup, lab.West: q.westGroup}[cluster]
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
			dp := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
			g.Expect(dp.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonVolSyncMoverUserUnknown), dp.Message)
			g.Expect(dp.Message).To(ContainSubstring("spec.volSyncMoverSecurityContext"))
			if cluster == lab.East {
				g.Expect(dp.Message).To(ContainSubstring("container app of pod db-0 states no runAsUser"))
				g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady).Status).To(Equal(metav1.ConditionTrue), "the PVC stays writable")
			}
		}).Should(Succeed(), "%s says its movers have no user", cluster)
	}
	sources, _ := countVolSync(ctx, g, q.east, ns)
	g.Expect(sources).To(BeEmpty(), "no source whose mover would fail at every sync")
	_, destinations := countVolSync(ctx, g, q.west, ns)
	g.Expect(destinations).To(BeEmpty(), "no destination whose daemon would refuse every sync")

	// The DRPlacementControl's user reaches both groups.
	for cl, group := range map[client.Client]*v1alpha1.VolumeReplicationGroup{q.east: q.eastGroup, q.west: q.westGroup} {
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
			if got.Spec.VolSync == nil {
				got.Spec.VolSync = &v1alpha1.VolSyncSpec{}
			}
			got.Spec.VolSync.MoverSecurityContext = &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 26}
			g.Expect(cl.Update(ctx, got)).To(Succeed())
		}).Should(Succeed())
	}
	hubSend(ctx, g, q.east, q.eastGroup, q.west, q.westGroup, 1)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(q.east.Get(ctx, client.ObjectKeyFromObject(q.eastGroup), got)).To(Succeed())
		dp := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dp.Reason, dp.Message)
	}).Should(Succeed(), "with the DRPlacementControl's user, the PVC replicates")
	expectMoversOf(ctx, g, q, ns, "data-db-0", &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](26),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	})
}
