package drpc

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
)

// loseAndRestore plays the hub's loss and `drover hub restore`: the DRPlacementControl is gone
// from the hub, and a new one is made from the groups' record with the action the groups say
// (hubrecord.Placement), marked restored. down are the clusters that do not answer.
func (w *world) loseAndRestore(down ...string) {
	w.t.Helper()
	ctx := context.Background()
	d := w.drpc()
	d.Finalizers = nil
	w.g.Expect(w.hub.Update(ctx, d)).To(Succeed())
	w.g.Expect(w.hub.Delete(ctx, d)).To(Succeed())
	var groups []hubrecord.Group
	var record *hubrecord.Record
	for _, name := range []string{"east", "west"} {
		g := hubrecord.Group{Cluster: name}
		for _, n := range down {
			if n == name {
				g.Err = errors.New("connection refused")
			}
		}
		if g.Err == nil {
			g.VRG = w.vrg(name)
			if r, err := hubrecord.Of(g.VRG); err == nil && r != nil && (record == nil || r.DRPC.Generation > record.DRPC.Generation) {
				record = r
			}
		}
		groups = append(groups, g)
	}
	w.g.Expect(record).NotTo(BeNil(), "the hub recorded the DRPlacementControl on the groups")
	restored := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: record.DRPC.Namespace, Name: record.DRPC.Name,
			Annotations: map[string]string{hubrecord.AnnotationRestored: w.now.Format(time.RFC3339)}},
		Spec: hubrecord.Placement(record.DRPC.Spec, hubrecord.Rebuild(groups)),
	}
	w.g.Expect(w.hub.Create(ctx, restored)).To(Succeed())
}

func TestTheHubRecordsOnEachGroupWhatTheGroupDoesNotHold(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	for _, name := range []string{"east", "west"} {
		r, err := hubrecord.Of(w.vrg(name))
		w.g.Expect(err).NotTo(HaveOccurred())
		w.g.Expect(r).NotTo(BeNil(), "%s's group carries the record", name)
		w.g.Expect(r.DRPC.Spec.PreferredCluster).To(Equal("east"))
		w.g.Expect(r.Policy).To(Equal(hubrecord.Policy{Name: "pair", DRClusters: []string{"east", "west"}}))
		c, ok := r.Cluster("west")
		w.g.Expect(ok).To(BeTrue())
		w.g.Expect(c.S3ProfileName).To(Equal("s3-west"))
	}
	east := w.vrg("east")
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) { s.DrillHistoryLimit = ptrTo(int32(3)) })
	w.reconcile()
	now := w.vrg("east")
	w.g.Expect(now.Generation).To(Equal(east.Generation), "the record is metadata: the group's generation stays")
	r, _ := hubrecord.Of(now)
	w.g.Expect(*r.DRPC.Spec.DrillHistoryLimit).To(Equal(int32(3)), "a spec change the hub acts on is recorded")
}

func ptrTo[T any](v T) *T { return &v }

func TestARestoredDRPCStartsWhereItsGroupsAreAndRewritesNoGroup(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.agent("west", false)
	w.reconcile()
	w.gw.SetDown("east", false)
	w.reconcile()
	w.agent("east", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	east, west := w.vrg("east"), w.vrg("west")

	w.loseAndRestore()
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailedOver), "rebuilt from the groups, not deployed on preferredCluster")
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.g.Expect(d.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(w.vrg("east").Generation).To(Equal(east.Generation), "no group is rewritten")
	w.g.Expect(w.vrg("west").Generation).To(Equal(west.Generation), "no group is rewritten")
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
}

func TestARestoredDRPCAdoptsAFailoverMadeWithoutAnyHubAndDemotesTheOldPrimaryWhenItReturns(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.now = w.now.Add(time.Minute)
	w.promoteWithoutHub("west")

	w.loseAndRestore("east")
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(d.Spec.FailoverCluster).To(Equal("west"))
	w.agent("west", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailedOver), "the machine's failover adopts the promotion")
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.reconcile()
	w.g.Expect(w.vrg("west").Annotations).NotTo(HaveKey(v1alpha1.AnnotationPromotedWithoutHub))
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary), "east, down, is not written")

	w.gw.SetDown("east", false)
	w.reconcile()
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "the returning old primary is demoted")
}

func TestARestoredDRPCWhoseGroupsDoNotTellWaitsAndWritesNothing(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	west := w.vrg("west")
	w.gw.SetDown("east", true)
	w.loseAndRestore("east")
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(BeEmpty())
	c := w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonRebuildingStatus))
	w.g.Expect(c.Message).To(ContainSubstring("east does not answer"))
	w.g.Expect(w.vrg("west").Generation).To(Equal(west.Generation))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "west is not promoted on a guess")

	w.gw.SetDown("east", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeployed))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("east"))
}
