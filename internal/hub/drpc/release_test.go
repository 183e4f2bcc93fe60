package drpc

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
)

// agentFinalizer gives a group the finalizer its agent would put on it, so that a deletion
// leaves it being deleted until agentDone.
func (w *world) agentFinalizer(cluster string) {
	w.t.Helper()
	v := w.vrg(cluster)
	controllerutil.AddFinalizer(v, "drover.io/vrg-protection")
	w.g.Expect(w.clusters[cluster].Update(context.Background(), v)).To(Succeed())
}

// agentDone plays the agent having unprotected a group being deleted: its finalizer goes.
func (w *world) agentDone(cluster string) {
	w.t.Helper()
	v := w.vrg(cluster)
	w.g.Expect(v).NotTo(BeNil())
	w.g.Expect(v.DeletionTimestamp).NotTo(BeNil(), "%s's group is being deleted", cluster)
	controllerutil.RemoveFinalizer(v, "drover.io/vrg-protection")
	w.g.Expect(w.clusters[cluster].Update(context.Background(), v)).To(Succeed())
}

func (w *world) beingDeleted(cluster string) bool {
	w.t.Helper()
	v := w.vrg(cluster)
	return v != nil && v.DeletionTimestamp != nil
}

// ceph-csi releases a secondary's VolumeReplication only while it replays a live primary, and
// disabling a primary's mirroring deletes the secondary's copies: unprotect removes the
// primary's group first, the secondary's once it is gone, and with no primary left asks the
// group holding the last copy to release its volumes as primary.
func TestUnprotectRemovesThePrimarysGroupBeforeTheSecondarys(t *testing.T) {
	ctx := context.Background()
	t.Run("the primary's group first, the secondary's once it is gone", func(t *testing.T) {
		w := newWorld(t, appDRPC())
		w.deployed()
		w.agentFinalizer("east")
		w.agentFinalizer("west")
		w.g.Expect(w.hub.Delete(ctx, w.drpc())).To(Succeed())
		w.reconcile()
		w.g.Expect(w.beingDeleted("east")).To(BeTrue(), "the primary's group is deleted")
		w.g.Expect(w.beingDeleted("west")).To(BeFalse(), "the secondary's group waits")
		w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("west's group is secondary: it is removed once the primary's is gone"))

		w.agentDone("east")
		w.reconcile()
		w.g.Expect(w.beingDeleted("west")).To(BeTrue(), "the primary's group gone, the secondary's is deleted")
		w.g.Expect(w.vrg("west").Annotations).NotTo(HaveKey(v1alpha1.AnnotationUnprotectAsPrimary), "its copy went with the primary's mirroring")
		w.agentDone("west")
		w.reconcile()
		w.g.Expect(apierrors.IsNotFound(w.hub.Get(ctx, w.key, &v1alpha1.DRPlacementControl{}))).To(BeTrue())
	})
	t.Run("two secondaries: the current primary's releases as primary, the other after it", func(t *testing.T) {
		w := newWorld(t, appDRPC())
		w.deployed()
		// A relocation interrupted between the demotion of east and the promotion of west.
		east := w.vrg("east")
		east.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
		w.g.Expect(w.clusters["east"].Update(ctx, east)).To(Succeed())
		w.agentFinalizer("east")
		w.agentFinalizer("west")
		w.g.Expect(w.hub.Delete(ctx, w.drpc())).To(Succeed())
		w.reconcile()
		w.g.Expect(w.beingDeleted("east")).To(BeTrue())
		w.g.Expect(w.vrg("east").Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUnprotectAsPrimary, "true"))
		w.g.Expect(w.beingDeleted("west")).To(BeFalse())
		w.agentDone("east")
		w.reconcile()
		w.g.Expect(w.beingDeleted("west")).To(BeTrue())
		w.g.Expect(w.vrg("west").Annotations).NotTo(HaveKey(v1alpha1.AnnotationUnprotectAsPrimary))
	})
	t.Run("the primary's cluster declared lost: the survivor releases as primary", func(t *testing.T) {
		w := newWorld(t, appDRPC())
		w.deployed()
		w.agentFinalizer("west")
		w.gw.SetDown("east", true)
		w.declareLost("east")
		w.g.Expect(w.hub.Delete(ctx, w.drpc())).To(Succeed())
		w.reconcile()
		w.g.Expect(w.beingDeleted("west")).To(BeTrue())
		w.g.Expect(w.vrg("west").Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUnprotectAsPrimary, "true"))
	})
	t.Run("the primary's cluster unreachable: the secondary waits for it", func(t *testing.T) {
		w := newWorld(t, appDRPC())
		w.deployed()
		w.agentFinalizer("west")
		w.gw.SetDown("east", true)
		w.g.Expect(w.hub.Delete(ctx, w.drpc())).To(Succeed())
		w.reconcile()
		w.g.Expect(w.beingDeleted("west")).To(BeFalse())
		w.g.Expect(w.clusters["west"].Get(ctx, client.ObjectKey{Namespace: "app", Name: "app"}, &v1alpha1.VolumeReplicationGroup{})).To(Succeed())
		msg := w.cond(v1alpha1.ConditionAvailable).Message
		w.g.Expect(msg).To(ContainSubstring("east is unreachable"))
		w.g.Expect(msg).To(ContainSubstring("west's group is secondary"))
	})
}

// A failover whose source answers demotes it only once the target has released the PVCs the
// application deleted there: the storage releases one only while the volume replays a live
// primary, and the demoted source would leave none. A source that does not answer is not waited
// for.
func TestAFailoverWaitsForTheTargetsReleasesBeforeDemotingAReachableSource(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	west := w.vrg("west")
	west.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: west.Namespace, Name: "data-db",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionDataReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReleasePending,
			Message: "it was deleted here; its VolumeReplication is deleted once the storage replays the peer's primary", LastTransitionTime: metav1.NewTime(w.now)}}}}
	w.g.Expect(w.clusters["west"].Status().Update(context.Background(), west)).To(Succeed())

	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	d := w.drpc()
	t.Logf("%s/%s: %s", d.Status.Phase, d.Status.Progression, w.cond(v1alpha1.ConditionAvailable).Message)
	w.g.Expect(d.Status.Progression).To(Equal(string(ProgressionWaitingForTarget)))
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary), "east is not demoted while west waits for its storage")
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("release PVC"))

	// Released: the failover goes on, demoting east first.
	west = w.vrg("west")
	west.Status.ProtectedPVCs = nil
	w.g.Expect(w.clusters["west"].Status().Update(context.Background(), west)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "promoted only once east is demoted")
}
