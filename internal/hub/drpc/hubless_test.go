package drpc

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// promoteWithoutHub plays drover failover --without-hub on a cluster: its group asked primary
// with action Failover at the next generation, marked with that generation.
func (w *world) promoteWithoutHub(cluster string) *v1alpha1.VolumeReplicationGroup {
	w.t.Helper()
	v := w.vrg(cluster)
	v.Spec.ReplicationState, v.Spec.Action = v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover
	v.Generation++
	raw, err := json.Marshal(v1alpha1.PromotedWithoutHub{Cluster: cluster, Generation: v.Generation, At: metav1.NewTime(w.now)})
	w.g.Expect(err).NotTo(HaveOccurred())
	if v.Annotations == nil {
		v.Annotations = map[string]string{}
	}
	v.Annotations[v1alpha1.AnnotationPromotedWithoutHub] = string(raw)
	w.g.Expect(w.clusters[cluster].Update(context.Background(), v)).To(Succeed())
	w.agent(cluster, false)
	return w.vrg(cluster)
}

// expectUntouched checks that a group holds the spec and generation it had.
func (w *world) expectUntouched(cluster string, was *v1alpha1.VolumeReplicationGroup) {
	w.t.Helper()
	now := w.vrg(cluster)
	w.g.Expect(now.Generation).To(Equal(was.Generation), "the hub wrote into %s's group", cluster)
	w.g.Expect(now.Spec.ReplicationState).To(Equal(was.Spec.ReplicationState))
}

func TestAHubWithAnOlderStatusNeverActsOnAGroupPromotedWithoutIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before puts the DRPlacementControl where the hub left it when it was lost.
		before func(w *world)
	}{
		{name: "deployed on east", before: func(w *world) {}},
		{name: "failing over to east, the action of an earlier failover", before: func(w *world) {
			w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
				s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "east"
			})
		}},
		{name: "asked to relocate to east, where it runs", before: func(w *world) {
			w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
				s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "east"
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, appDRPC())
			w.deployed()
			tc.before(w)
			w.reconcile()
			w.gw.SetDown("east", true)
			w.now = w.now.Add(time.Minute)
			west := w.promoteWithoutHub("west")

			for _, eastUp := range []bool{false, true} {
				w.gw.SetDown("east", !eastUp)
				eastBefore := w.vrg("east")
				w.reconcile()
				w.expectUntouched("west", west)
				w.expectUntouched("east", eastBefore)
				d := w.drpc()
				w.g.Expect(d.Status.CurrentPrimary).To(Equal("east"))
				c := w.cond(v1alpha1.ConditionActionAccepted)
				w.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPromotedWithoutHub))
				w.g.Expect(c.Message).To(ContainSubstring("west's VolumeReplicationGroup was promoted without the hub"))
				w.g.Expect(c.Message).To(ContainSubstring("run drover failover app -n app --to west"))
			}
		})
	}
}

func TestAFailoverAskedToTheGroupPromotedWithoutTheHubAdoptsItAndDemotesTheOldPrimary(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.now = w.now.Add(time.Minute)
	w.promoteWithoutHub("west")
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionActionAccepted).Reason).To(Equal(v1alpha1.ReasonPromotedWithoutHub))

	w.gw.SetDown("east", false)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.agent("west", false)
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	east := w.vrg("east")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "the adopting failover demotes the old primary")
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(w.cond(v1alpha1.ConditionActionAccepted).Status).To(Equal(metav1.ConditionTrue))

	// Settled on west, the hub removes the mark, so that it holds nothing later: the
	// relocation back to east runs as any.
	w.reconcile()
	w.g.Expect(w.vrg("west").Annotations).NotTo(HaveKey(v1alpha1.AnnotationPromotedWithoutHub))
	w.agent("east", false)
	w.reconcile()
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "east"
	})
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseRelocating))
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.FinalSyncRequest).NotTo(BeEmpty(), "west is demoted for the relocation's final sync")
}

func TestTwoGroupsPromotedWithoutTheHubAreHeldForAPersonToChoose(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	east := w.promoteWithoutHub("east")
	west := w.promoteWithoutHub("west")
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.expectUntouched("east", east)
	w.expectUntouched("west", west)
	c := w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPromotedWithoutHub))
	w.g.Expect(c.Message).To(ContainSubstring("decide which of east and west holds the application's data"))
}
