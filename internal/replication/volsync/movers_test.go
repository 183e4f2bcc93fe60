package volsync

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// restrictedMover is the moverSecurityContext of the application's user as drover gives it:
// with VolSync's container settings, admitted by the restricted Pod Security Standard.
func restrictedMover() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// A source's and a destination's movers run as the application's user, non-root with the
// RuntimeDefault seccomp profile; privileged movers get only the profile (runAsNonRoot would
// stop their root container); with no user known, drover makes no mover and says what to set.
func TestMoversRunAsTheApplicationsUserOrNotAtAll(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	key := KeySecretName("db", "data")
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{PVCNamespace: "app", PVCName: "data", Address: "a.lab", KeySecretName: key}}}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: driver}
	cl := newClient(g, class, ptr.To(snapshotClass("lab-file-snapshot", driver, false)), keySecret(key))
	b := New(cl, cl)

	unknown := pvcContext(vrg)
	unknown.MoverSecurityContext, unknown.MoverUserUnknown = nil, "container db of pod db-0 runs as root"
	res := b.Protect(ctx, unknown)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonVolSyncMoverUserUnknown))
	g.Expect(res.Message).To(And(ContainSubstring("UID 0 without capabilities"), ContainSubstring("container db of pod db-0 runs as root"),
		ContainSubstring("spec.volSyncMoverSecurityContext"), ContainSubstring("Privileged")))
	g.Expect(res.Writable).To(BeTrue(), "the PVC stays writable; only its replication waits")
	err := cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, &volsyncv1alpha1.ReplicationSource{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no source whose mover would fail at every sync")

	g.Expect(b.Protect(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rs)).To(Succeed())
	g.Expect(rs.Spec.RsyncTLS.MoverSecurityContext).To(Equal(restrictedMover()))

	vrg.Spec.VolSync.Movers = v1alpha1.VolSyncMoversPrivileged
	g.Expect(b.Protect(ctx, unknown).IsDone()).To(BeTrue(), "privileged movers need no user")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	g.Expect(rs.Spec.RsyncTLS.MoverSecurityContext).To(Equal(&corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}))

	secondary := group()
	rp := v1alpha1.VolSyncReceivePVC{PVCNamespace: "app", PVCName: "in", StorageClassName: "lab-file",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: resource.MustParse("1Gi")}
	_, res = b.EnsureDestination(ctx, secondary, rp, "")
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonVolSyncMoverUserUnknown))
	g.Expect(res.Message).To(ContainSubstring("the primary reports no user"))
	err = cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "in"}, &volsyncv1alpha1.ReplicationDestination{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no destination whose daemon would refuse every sync")

	rp.MoverSecurityContext = appUser()
	b.EnsureDestination(ctx, secondary, rp, "")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "in"}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.MoverSecurityContext).To(Equal(restrictedMover()), "the destination runs as the primary's movers")

	secondary.Spec.VolSync = &v1alpha1.VolSyncSpec{MoverSecurityContext: &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 26}}
	b.EnsureDestination(ctx, secondary, rp, "")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rd), rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.MoverSecurityContext.RunAsUser).To(HaveValue(Equal(int64(26))), "the DRPlacementControl's user wins")
	g.Expect(rd.Spec.RsyncTLS.MoverSecurityContext.FSGroup).To(BeNil())
}
