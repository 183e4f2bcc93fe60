package vrg

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// fencedClient wraps the fixture's client: while enforced, creating a pod fails as the API
// server fails it when the fence refuses the pod.
func fencedClient(c client.Client, enforced *atomic.Bool) client.Client {
	return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok && enforced.Load() {
				return &apierrors.StatusError{ErrStatus: metav1.Status{
					Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
					Message: `admission webhook "` + webhook.WebhookName + `" denied the request: fenced`,
				}}
			}
			return c.Create(ctx, obj, opts...)
		},
	})
}

// TestARelocationDemotesOnlyBehindAnEnforcedFenceAndRecordsTheFinalSync follows one relocation's
// demotion pass by pass: the fence first, the demotion without resync once the API server
// enforces it, the final sync once a sync began after the demotion, and the fence undone when
// the group is primary again.
func TestARelocationDemotesOnlyBehindAnEnforcedFenceAndRecordsTheFinalSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv, pvc := protectedPVC()
	f := newFixture(t, pv, pvc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	enforced := &atomic.Bool{}
	f.r.Client, f.r.Fence = fencedClient(f.client, enforced), true
	f.vrg.Spec.FinalSyncRequest = "relocate-1"
	f.demote(g, v1alpha1.ActionRelocate)

	result, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(requeueWaitingForFence))
	got := f.group(g)
	g.Expect(got.Annotations).To(HaveKeyWithValue(webhook.AnnotationFence, webhook.FenceRelocate))
	ns := &corev1.Namespace{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(webhook.LabelFenced, "true"))
	c := groupCondition(g, got, v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonProgressing))
	g.Expect(c.Message).To(ContainSubstring("waiting for the API server to enforce the fence"))
	g.Expect(f.backend.Demoted()).To(BeEmpty(), "no demotion before the fence is enforced")

	// Enforced, but the last sync began before the demotion: Secondary, no final sync yet.
	enforced.Store(true)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{LastSyncTime: &metav1.Time{Time: time.Now().Add(-time.Minute)}})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.backend.Demoted()).To(HaveExactElements("app/data-db-0"), "demoted without resync")
	got = f.group(g)
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	g.Expect(got.Status.FinalSync).To(BeNil())
	g.Expect(got.Annotations).NotTo(HaveKey(webhook.AnnotationFence), "the secondary state fences from now on")
	g.Expect(got.Annotations).To(HaveKey(AnnotationDemotedAt))

	// The storage's final mirror: a sync that began after the demotion.
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{LastSyncTime: &metav1.Time{Time: time.Now().Add(time.Second)}})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	got = f.group(g)
	g.Expect(got.Status.FinalSync).NotTo(BeNil())
	g.Expect(got.Status.FinalSync.Request).To(Equal("relocate-1"))
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	got = f.group(g)
	g.Expect(got.Annotations).NotTo(HaveKey(AnnotationDemotedAt))
	g.Expect(got.Status.FinalSync.Request).To(Equal("relocate-1"))
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(webhook.LabelFenced, "true"), "a secondary group keeps its namespace fenced")

	// Primary again: the namespace is unfenced.
	got.Spec.ReplicationState, got.Spec.Action, got.Spec.FinalSyncRequest = v1alpha1.ReplicationStatePrimary, "", ""
	g.Expect(f.client.Update(ctx, got)).To(Succeed())
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).NotTo(HaveKey(webhook.LabelFenced))
}

func TestARelocationWaitsForItsConsumersAndWithoutAFinalSyncRequestLeavesFinalSyncUnset(t *testing.T) {
	g := NewWithT(t)
	pv, pvc := protectedPVC()
	running := podUsing("db-0", "data-db-0", corev1.PodRunning)
	other := podUsing("web-0", "scratch", corev1.PodRunning)
	va := attachment("csi-0", "pv-0")
	f := newFixture(t, pv, pvc, running, other, va, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	enforced := &atomic.Bool{}
	enforced.Store(true)
	f.r.Client, f.r.Fence = fencedClient(f.client, enforced), true
	f.demote(g, v1alpha1.ActionRelocate)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	c := pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCInUse))
	g.Expect(c.Message).To(And(
		ContainSubstring("PVC app/data-db-0 is in use by pod app/db-0, VolumeAttachment csi-0 (node node-1)"),
		ContainSubstring("the workload must be stopped"),
		Not(ContainSubstring("web-0"))), "the fenced re-check reads uncached and counts only the PVC's consumers")
	g.Expect(f.backend.Demoted()).To(BeEmpty())

	g.Expect(f.client.Delete(context.Background(), running)).To(Succeed())
	g.Expect(f.client.Delete(context.Background(), va)).To(Succeed())
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	got := f.group(g)
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	g.Expect(got.Status.FinalSync).To(BeNil())
	g.Expect(got.Annotations).NotTo(HaveKey(webhook.AnnotationFence))
	g.Expect(got.Annotations).NotTo(HaveKey(AnnotationDemotedAt))
	g.Expect(f.backend.Demoted()).To(HaveEach("app/data-db-0"))
}

// TestAPassActsOnTheSpecItBeganWithWhenTheHubChangesItMeanwhile: the hub promotes a relocation's
// old primary (back to primary, no spec.volSync) while the agent's secondary pass removes
// AnnotationDemotedAt, so the answer to that patch carries the primary's spec. The pass goes on
// as the secondary it began as: it keeps the ReplicationDestinations of its
// spec.volSync.receivePVCs, which the promotion needs to adopt the PVCs kept here (taking the
// answer, it found no receivePVCs and deleted them all), and its status answers the generation
// it acted on, not the primary's.
func TestAPassActsOnTheSpecItBeganWithWhenTheHubChangesItMeanwhile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv, pvc := protectedPVC()
	rd := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{
		Namespace: "app", Name: "data-web-0",
		Labels: map[string]string{volsync.LabelVRGName: "db", volsync.LabelVRGNamespace: "app"},
	}}
	f := newFixture(t, pv, pvc, rd, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	backends, err := replication.NewRegistry(f.backend, volsync.New(f.client, f.client))
	g.Expect(err).NotTo(HaveOccurred())
	f.r.Backends = backends
	enforced := &atomic.Bool{}
	enforced.Store(true)
	promoteOnPatch := &atomic.Bool{}
	f.r.Client, f.r.Fence = interceptor.NewClient(fencedClient(f.client, enforced).(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*v1alpha1.VolumeReplicationGroup); ok && promoteOnPatch.CompareAndSwap(true, false) {
				// The hub's next step lands between the pass's read and its patch.
				hub := &v1alpha1.VolumeReplicationGroup{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), hub); err != nil {
					return err
				}
				hub.Spec.ReplicationState, hub.Spec.FinalSyncRequest, hub.Spec.VolSync = v1alpha1.ReplicationStatePrimary, "", nil
				hub.Generation++
				if err := c.Update(ctx, hub); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}), true
	f.vrg.Spec.FinalSyncRequest = "relocate-1"
	f.vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{ReceivePVCs: []v1alpha1.VolSyncReceivePVC{{
		PVCNamespace: "app", PVCName: "data-web-0", StorageClassName: "lab-file",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: resource.MustParse("1Gi"),
		MoverSecurityContext: &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000},
	}}}
	f.demote(g, v1alpha1.ActionRelocate)

	// Fenced, demoted, and the final sync recorded (a sync began after the demotion).
	_, err = f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{LastSyncTime: &metav1.Time{Time: time.Now().Add(time.Hour)}})
	got := f.group(g)
	for i := 0; i < 3 && got.Status.FinalSync == nil; i++ {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
		got = f.group(g)
	}
	g.Expect(got.Status.FinalSync).NotTo(BeNil())
	g.Expect(got.Annotations).To(HaveKey(AnnotationDemotedAt), "removed by the next pass")
	secondaryGeneration := got.Generation
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(rd), &volsyncv1alpha1.ReplicationDestination{})).To(Succeed())

	// The pass that removes AnnotationDemotedAt meets the hub's promotion.
	promoteOnPatch.Store(true)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(promoteOnPatch.Load()).To(BeFalse(), "the pass patched the group")
	got = f.group(g)
	g.Expect(got.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	g.Expect(got.Generation).To(BeNumerically(">", secondaryGeneration))
	g.Expect(got.Annotations).NotTo(HaveKey(AnnotationDemotedAt))
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(rd), &volsyncv1alpha1.ReplicationDestination{})).To(Succeed(),
		"a secondary pass keeps the destinations of its receivePVCs")
	g.Expect(got.Status.ObservedGeneration).To(Equal(secondaryGeneration), "the status answers the spec the pass acted on")
	g.Expect(groupCondition(g, got, v1alpha1.ConditionDataReady).ObservedGeneration).To(Equal(secondaryGeneration))
}

// A relocation of a group that selects no PVC (an application protected by its captured objects
// alone) has no volume to sync: its final sync is recorded at once, so that the hub's relocation
// goes on to the target.
func TestARelocationOfAGroupWithNoPVCRecordsItsFinalSync(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	f.r.Fence = true
	f.vrg.Spec.FinalSyncRequest = "relocate-1"
	f.demote(g, v1alpha1.ActionRelocate)
	for range 3 {
		_, err := f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	got := f.group(g)
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	g.Expect(got.Status.FinalSync).NotTo(BeNil(), "the final sync of a group with no volume is recorded")
	g.Expect(got.Status.FinalSync.Request).To(Equal("relocate-1"))
	g.Expect(got.Annotations).NotTo(HaveKey(AnnotationDemotedAt))
}
