package volsync_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// sourceState reads a ReplicationSource's last sync, mover result and Synchronizing condition.
func sourceState(g Gomega, cl client.Client, namespace, name string) (*volsyncv1alpha1.ReplicationSourceStatus, metav1.Condition) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rs)).To(Succeed())
	g.Expect(rs.Status).NotTo(BeNil())
	c := apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
	g.Expect(c).NotTo(BeNil())
	return rs.Status, *c
}

// expectMoverFailing waits until a source's mover fails with a log containing logPart while its
// sync stays in progress and completes nothing, as VolSync reports a failing mover Job it retries.
func expectMoverFailing(g Gomega, cl client.Client, namespace, name, logPart, why string) {
	g.Eventually(func(g Gomega) {
		st, c := sourceState(g, cl, namespace, name)
		g.Expect(st.LatestMoverStatus).NotTo(BeNil())
		g.Expect(st.LatestMoverStatus.Result).To(Equal(volsyncv1alpha1.MoverResultFailed))
		g.Expect(st.LatestMoverStatus.Logs).To(ContainSubstring(logPart))
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonSync))
		g.Expect(st.LastSyncTime).To(BeNil(), "no sync completes")
		g.Expect(st.LastSyncStartTime).NotTo(BeNil(), "the sync stays running and is retried")
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), why)
}

// expectSynced waits until a source completed a sync with a successful mover.
func expectSynced(g Gomega, cl client.Client, namespace, name, why string) {
	g.Eventually(func(g Gomega) {
		st, _ := sourceState(g, cl, namespace, name)
		g.Expect(st.LastSyncTime).NotTo(BeNil())
		g.Expect(st.LatestMoverStatus).NotTo(BeNil())
		g.Expect(st.LatestMoverStatus.Result).To(Equal(volsyncv1alpha1.MoverResultSuccessful))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), why)
}

// setSourceMoverSC sets a source's moverSecurityContext.
func setSourceMoverSC(g Gomega, cl client.Client, namespace, name string, sc *corev1.PodSecurityContext) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rs)).To(Succeed())
	patch := client.MergeFrom(rs.DeepCopy())
	rs.Spec.RsyncTLS.MoverSecurityContext = sc
	g.Expect(cl.Patch(context.Background(), rs, patch)).To(Succeed())
}

// pairWithMovers creates a destination on west and a source on east in a new namespace of both,
// with the destination's and the source's moverSecurityContext, and returns the namespace.
func pairWithMovers(t *testing.T, g Gomega, east, west client.Client, dst, src *corev1.PodSecurityContext, nsLabels map[string]string) string {
	ctx := context.Background()
	ns := storagetest.Namespace(t, g, east, west)
	for _, cl := range []client.Client{east, west} {
		obj := &corev1.Namespace{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: ns}, obj)).To(Succeed())
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Labels = nsLabels
		g.Expect(cl.Patch(ctx, obj, patch)).To(Succeed())
	}
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "data"))).To(Succeed())
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "data"), storagetest.Tree{"a.txt": []byte("one\n")})
	rd := rsyncDestination(ns, "data")
	rd.Spec.RsyncTLS.MoverSecurityContext = dst
	g.Expect(west.Create(ctx, rd)).To(Succeed())
	if nsLabels != nil {
		return ns // a destination refused admission publishes its address only once admitted
	}
	address, key := publishedDestination(g, west, ns, "data")
	copySecret(g, west, east, ns, key)
	rs := rsyncSource(ns, "data", "data", address, key, "first")
	rs.Spec.RsyncTLS.MoverSecurityContext = src
	g.Expect(east.Create(ctx, rs)).To(Succeed())
	return ns
}

// A mover that would run as root without capabilities (no moverSecurityContext, no privileged
// movers: VolSync's defaults on a platform that assigns no UID) fails as rsync does, and VolSync
// retries it: a source running so fails its sync, and a destination running so makes every
// source's rsync fail at the daemon's setgid. Given a non-root user, or privileged movers by the
// namespace's annotation, the same movers sync.
func TestVolSyncAMoverRunningAsRootWithoutCapabilitiesFailsAsRsyncDoes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)

	ns := pairWithMovers(t, g, east, west, moverUser(), nil, nil)
	expectMoverFailing(g, east, ns, "data", "UID 0 without capabilities", "a source mover running as root without capabilities fails")
	setSourceMoverSC(g, east, ns, "data", moverUser())
	expectSynced(g, east, ns, "data", "the source mover, given the application's user, syncs")

	ns = pairWithMovers(t, g, east, west, nil, moverUser(), nil)
	expectMoverFailing(g, east, ns, "data", "@ERROR: setgid failed", "a destination mover running as root without capabilities fails every connection")
	obj := &corev1.Namespace{}
	g.Expect(west.Get(ctx, client.ObjectKey{Name: ns}, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, "volsync.backube/privileged-movers", "true")
	g.Expect(west.Patch(ctx, obj, patch)).To(Succeed())
	expectSynced(g, east, ns, "data", "the destination's mover, privileged by its namespace's annotation, accepts the sync")
	job := &batchv1.Job{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "volsync-rsync-tls-dst-data"}, job)).To(Succeed())
	csc := job.Spec.Template.Spec.Containers[0].SecurityContext
	g.Expect(csc.RunAsUser).To(HaveValue(BeZero()), "a privileged mover runs as root")
	g.Expect(csc.Capabilities.Add).To(ContainElements(corev1.Capability("SETGID"), corev1.Capability("DAC_OVERRIDE")))
}

// A namespace that enforces the restricted Pod Security Standard refuses VolSync's mover pods
// unless their security context complies: VolSync sets no runAsNonRoot nor seccomp profile of its
// own, so a moverSecurityContext with only a user is refused (the destination's Job gets no pod,
// the source's sync waits), and one adding runAsNonRoot and the RuntimeDefault profile is admitted.
func TestVolSyncMoverPodsInARestrictedNamespaceAreAdmittedOnlyWhenTheyComply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	restricted := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	compliant := moverUser()
	compliant.RunAsNonRoot = ptr.To(true)
	compliant.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}

	ns := pairWithMovers(t, g, east, west, moverUser(), nil, restricted)
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		c := apimeta.FindStatusCondition(rd.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("violates PodSecurity"))
		pods := &corev1.PodList{}
		g.Expect(west.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "the API server admits no mover pod")
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination's mover pod is refused")

	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, rd)).To(Succeed())
	patch := client.MergeFrom(rd.DeepCopy())
	rd.Spec.RsyncTLS.MoverSecurityContext = compliant
	g.Expect(west.Patch(ctx, rd, patch)).To(Succeed())
	address, key := publishedDestination(g, west, ns, "data")
	copySecret(g, west, east, ns, key)
	rs := rsyncSource(ns, "data", "data", address, key, "first")
	g.Expect(east.Create(ctx, rs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, c := sourceState(g, east, ns, "data")
		g.Expect(c.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonSync))
		g.Expect(c.Message).To(ContainSubstring("violates PodSecurity"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the source's mover pod is refused and its sync waits")
	st, _ := sourceState(g, east, ns, "data")
	g.Expect(st.LastSyncTime).To(BeNil())

	setSourceMoverSC(g, east, ns, "data", compliant)
	expectSynced(g, east, ns, "data", "compliant movers are admitted and sync")
}
