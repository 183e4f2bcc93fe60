package drpc

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// declareLost sets spec.lost on a DRCluster of the world.
func (w *world) declareLost(cluster string) {
	w.t.Helper()
	drc := &v1alpha1.DRCluster{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Name: cluster}, drc)).To(Succeed())
	drc.Spec.Lost = &v1alpha1.DRClusterLost{Reason: "flooded"}
	w.g.Expect(w.hub.Update(context.Background(), drc)).To(Succeed())
}

func TestActionsTargetingAClusterDeclaredLostAreRefused(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("west", true)
	w.declareLost("west")
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseDeployed), "nothing starts")
	aa := w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(aa.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(aa.Reason).To(Equal(v1alpha1.ReasonClusterDeclaredLost))
	w.g.Expect(aa.Message).To(Equal("failover refused: west is declared lost (flooded)"))

	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	aa = w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(aa.Reason).To(Equal(v1alpha1.ReasonClusterDeclaredLost))
	w.g.Expect(aa.Message).To(ContainSubstring("relocate refused: west is declared lost (flooded)"))
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
}

func TestDeletingWithAClusterDeclaredLostRecordsItsGroupAndDropsItsStore(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))

	// West's agent holds its group while it unprotects.
	west := w.vrg("west")
	west.Finalizers = []string{"test/agent"}
	w.g.Expect(w.clusters["west"].Update(context.Background(), west)).To(Succeed())

	// Not declared lost: the deletion waits for east, and says how to stop waiting.
	w.g.Expect(w.hub.Delete(context.Background(), w.drpc())).To(Succeed())
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("if it is gone for good, declare it lost: drover cluster lost east"))
	w.g.Expect(w.drpc().Finalizers).To(ContainElement(Finalizer))

	w.declareLost("east")
	w.reconcile()
	west = w.vrg("west")
	w.g.Expect(west.DeletionTimestamp.IsZero()).To(BeFalse())
	w.g.Expect(west.Spec.S3Profiles).To(HaveLen(1), "east's store, lost with east, is dropped from the group being deleted")
	w.g.Expect(west.Spec.S3Profiles[0].Name).To(Equal("s3-west"))
	west.Finalizers = nil
	w.g.Expect(w.clusters["west"].Update(context.Background(), west)).To(Succeed())
	w.reconcile()
	err := w.hub.Get(context.Background(), w.key, &v1alpha1.DRPlacementControl{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deletion no longer waits for east")
	drc := &v1alpha1.DRCluster{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Name: "east"}, drc)).To(Succeed())
	w.g.Expect(drc.Status.GroupsToRemove).To(Equal([]v1alpha1.GroupRef{{Namespace: "app", Name: "app", Demote: true}}))
}

// A DRPlacementControl re-created under the name of one deleted while a cluster was lost does
// not touch that cluster while its DRCluster still lists the old group to remove: the hub
// removes that group first (demoting it if need be), then the new one deploys there.
func TestANewDRPCWaitsForTheGroupLeftUnderItsNameToBeRemoved(t *testing.T) {
	w := newWorld(t, appDRPC())
	drc := &v1alpha1.DRCluster{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Name: "east"}, drc)).To(Succeed())
	drc.Status.GroupsToRemove = []v1alpha1.GroupRef{{Namespace: "app", Name: "app", Demote: true}}
	w.g.Expect(w.hub.Status().Update(context.Background(), drc)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.vrg("east")).To(BeNil(), "nothing is created on east while the old group is listed")
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("east still holds the group of an earlier DRPlacementControl app/app"))

	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Name: "east"}, drc)).To(Succeed())
	drc.Status.GroupsToRemove = nil
	w.g.Expect(w.hub.Status().Update(context.Background(), drc)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.vrg("east")).NotTo(BeNil(), "once the old group is removed, the new one deploys")
}

// The storage forces a promotion while the peer is primary (csi-addons with ceph-csi), so a
// failover whose old primary answers demotes it first and promotes only once its group is
// Secondary for the failover's spec: never two writable primaries.
func TestAFailoverDemotesAnOldPrimaryThatAnswersBeforePromoting(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	east := w.vrg("east")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "west is not promoted while east is primary")
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
	w.g.Expect(d.Status.Progression).To(Equal(string(ProgressionDemotingSource)))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("waiting for east, which answers, to be demoted before west is promoted"))

	// East still has consumers, then reports Secondary for an older generation: still waiting.
	w.agent("east", true)
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("PVCInUse"))

	w.agent("east", false)
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary), "east is Secondary: west is promoted")
	w.g.Expect(w.drpc().Status.Progression).To(Equal(string(ProgressionPromotingTarget)))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).NotTo(ContainSubstring("without demoting"))
	w.agent("west", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
}

// The wait for the old primary's demotion is bounded by its answering: one that stops answering
// meanwhile is treated as lost, and the DRPlacementControl says the target is promoted without
// the demotion; a cluster declared lost is not waited for either.
func TestAFailoverPromotesWithoutTheDemotionWhenTheOldPrimaryStopsAnsweringOrIsDeclaredLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(w *world)
		says string
	}{
		{"it stops answering", func(w *world) { w.gw.SetDown("east", true) }, "west is promoted without demoting east first: east does not answer"},
		{"it is declared lost", func(w *world) { w.declareLost("east") }, "west is promoted without demoting east first: east is declared lost (flooded)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, appDRPC())
			w.deployed()
			w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
				s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
			})
			w.reconcile()
			w.agent("east", true)
			w.reconcile()
			w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))

			tc.lose(w)
			w.reconcile()
			w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
			w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring(tc.says))
			w.agent("west", false)
			w.reconcile()
			w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
			w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionFalse))
		})
	}
}

// A failover whose old primary never answers (partitioned, or lost: the hub cannot tell them
// apart) promotes at once, and says so with a warning event when it first asks the promotion,
// as it does for an old primary that stops answering during its demotion: a primary that
// still runs there is a second writable one until it is reachable and demoted.
func TestAFailoverFromAnOldPrimaryThatNeverAnswersSaysItPromotesWithoutDemotion(t *testing.T) {
	w := newWorld(t, appDRPC())
	recorder := events.NewFakeRecorder(20)
	w.r.Recorder = recorder
	w.deployed()
	w.gw.SetDown("east", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary), "east does not answer: west is promoted at once")
	w.reconcile()
	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	var warned []string
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, v1alpha1.EventPromotingWithoutDemotion) {
			warned = append(warned, e)
		}
	}
	w.g.Expect(warned).To(HaveLen(1), "one warning, when the promotion is first asked")
	w.g.Expect(warned[0]).To(ContainSubstring("Promoting west without demoting east first: east does not answer"))
}
