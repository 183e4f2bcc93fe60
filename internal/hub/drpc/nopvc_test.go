package drpc

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A self-contained application with no PVC selected (configuration only, or a StatefulSet that
// has not made its PVCs yet) is protected by its captured objects: the agent reports the last
// capture every store holds as the group's lastGroupSyncTime, and the hub judges it as a sync.
func TestAGroupWithNoPVCIsProtectedAndPeerReadyByItsCapturedObjects(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed() // the fake agent reports no PVC, its objects captured a second ago
	ctx := context.Background()
	p := w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Status).To(Equal(metav1.ConditionTrue), p.Message)
	w.g.Expect(p.Message).To(HavePrefix("no PVCs selected: protected by its captured objects, last captured 2026-11-30T11:59:59Z"))
	pr := w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionTrue), pr.Message)
	w.g.Expect(pr.Message).To(ContainSubstring("no PVCs selected: west's VolumeReplicationGroup is Secondary and takes over from the captured objects"))
	w.g.Expect(*w.drpc().Status.VRGs[0].ProtectedPVCs).To(BeZero())

	// The captures stop (the agent is stuck): the last one ages as a sync does.
	w.now = w.now.Add(25 * time.Second)
	w.reconcile()
	p = w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(p.Reason).To(Equal(v1alpha1.ReasonSyncStale))
	w.g.Expect(p.Message).To(Equal("no PVCs selected: the last capture of the objects that every S3 profile holds was 26s ago, more than twice the interval 10s"))

	// No capture in every store yet (a store is down): not protected, and the peer has nothing to take over from.
	east := w.vrg("east")
	east.Status.LastGroupSyncTime = nil
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionProtected).Message).To(Equal("no PVCs selected: waiting for the first capture of the objects that every S3 profile holds"))
	pr = w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(pr.Message).To(HavePrefix("no PVCs selected: waiting for a capture of the objects from east that every S3 profile holds"))

	// A PVC appears: it joins the group, which is judged by its syncs again.
	w.agent("east", false)
	capacity := resource.MustParse("1Gi")
	east = w.vrg("east")
	east.Status.LastGroupSyncTime = nil
	east.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: "app", Name: "data-db-0", Backend: v1alpha1.BackendVolRep, Capacity: &capacity}}
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionProtected).Message).To(Equal("no group sync has completed yet"))
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Message).To(HavePrefix("waiting for the first sync of every PVC from east"))

	east = w.vrg("east")
	last := metav1.NewTime(w.now)
	east.Status.LastGroupSyncTime = &last
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	p = w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Status).To(Equal(metav1.ConditionTrue), p.Message)
	w.g.Expect(p.Message).To(HavePrefix("data and metadata replicate"))
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Message).To(Equal("west's VolumeReplicationGroup is Secondary"))
}

// Without object protection (placement mode) a group with no PVC protects nothing, as before.
func TestAGroupWithNoPVCAndNoCapturedObjectsIsNotProtected(t *testing.T) {
	w := newWorld(t, placementDRPC())
	w.deployed()
	ctx := context.Background()
	east := w.vrg("east")
	east.Status.LastGroupSyncTime = nil
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionProtected).Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Message).To(ContainSubstring("its group protects none yet"))
}
