package drpc

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// world is a hub and two managed clusters of fake clients, with the DRPlacementControl
// reconciler over a fake gateway. The tests play the agents by writing the groups' status.
type world struct {
	t        *testing.T
	g        *WithT
	hub      client.Client
	clusters map[string]client.Client
	gw       *gateway.Fake
	r        *Reconciler
	now      time.Time
	key      client.ObjectKey
}

func newScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, ocmv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newWorld returns a world with a Validated policy pairing east and west and the given
// DRPlacementControl created on the hub.
func newWorld(t *testing.T, drpc *v1alpha1.DRPlacementControl) *world {
	t.Helper()
	s := newScheme(t)
	hub := fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&v1alpha1.DRPlacementControl{}, &v1alpha1.DRPolicy{}, &v1alpha1.DRCluster{}, &ocmv1beta1.PlacementDecision{}).Build()
	clusters := map[string]client.Client{}
	for _, name := range []string{"east", "west"} {
		clusters[name] = fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.VolumeReplicationGroup{}).
			WithInterceptorFuncs(interceptor.Funcs{Patch: bumpGeneration}).Build()
	}
	w := &world{t: t, g: NewWithT(t), hub: hub, clusters: clusters, gw: gateway.NewFake(clusters),
		now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), key: client.ObjectKeyFromObject(drpc)}
	w.r = &Reconciler{Client: hub, Gateway: w.gw, Now: func() time.Time { return w.now }}
	ctx := context.Background()
	for _, name := range []string{"east", "west"} {
		w.g.Expect(hub.Create(ctx, &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.DRClusterSpec{S3ProfileName: "s3-" + name, Region: name}})).To(Succeed())
	}
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pair"}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"}, SchedulingInterval: "10s",
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "lab-block", Backend: v1alpha1.BackendVolRep}},
		S3Profiles:           []v1alpha1.S3Profile{{Name: "s3-east", Endpoint: "http://127.0.0.1:1", Bucket: "drover"}, {Name: "s3-west", Endpoint: "http://127.0.0.1:2", Bucket: "drover"}},
	}}
	w.g.Expect(hub.Create(ctx, policy)).To(Succeed())
	apimeta.SetStatusCondition(&policy.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded})
	w.g.Expect(hub.Status().Update(ctx, policy)).To(Succeed())
	w.g.Expect(hub.Create(ctx, drpc)).To(Succeed())
	return w
}

// bumpGeneration patches a group and, when its spec changed, increments its generation as the
// API server does (the fake client does not).
func bumpGeneration(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	before := &v1alpha1.VolumeReplicationGroup{}
	vrg, isGroup := obj.(*v1alpha1.VolumeReplicationGroup)
	if isGroup {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), before); err != nil {
			return err
		}
	}
	if err := c.Patch(ctx, obj, patch, opts...); err != nil || !isGroup || equality.Semantic.DeepEqual(before.Spec, vrg.Spec) {
		return err
	}
	vrg.Generation = before.Generation + 1
	return c.Update(ctx, vrg)
}

// appDRPC returns a self-contained DRPlacementControl of namespace app preferring east.
func appDRPC() *v1alpha1.DRPlacementControl {
	return &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "app"},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef: v1alpha1.PolicyReference{Name: "pair"}, PreferredCluster: "east",
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, ProtectedNamespaces: []string{"app"},
		},
	}
}

// placementDRPC returns a DRPlacementControl in placement mode preferring east.
func placementDRPC() *v1alpha1.DRPlacementControl {
	d := appDRPC()
	d.Spec.ProtectedNamespaces = nil
	d.Spec.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "app"}
	return d
}

// reconcile runs one reconcile, which must not fail.
func (w *world) reconcile() ctrl.Result {
	w.t.Helper()
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key})
	w.g.Expect(err).NotTo(HaveOccurred())
	return res
}

func (w *world) drpc() *v1alpha1.DRPlacementControl {
	w.t.Helper()
	d := &v1alpha1.DRPlacementControl{}
	w.g.Expect(w.hub.Get(context.Background(), w.key, d)).To(Succeed())
	return d
}

// vrg returns the group on a cluster, nil when there is none.
func (w *world) vrg(cluster string) *v1alpha1.VolumeReplicationGroup {
	w.t.Helper()
	v := &v1alpha1.VolumeReplicationGroup{}
	err := w.clusters[cluster].Get(context.Background(), w.key, v)
	if apierrors.IsNotFound(err) {
		return nil
	}
	w.g.Expect(err).NotTo(HaveOccurred())
	return v
}

// updateSpec changes the DRPlacementControl's spec, bumping its generation as the API server would.
func (w *world) updateSpec(change func(*v1alpha1.DRPlacementControlSpec)) {
	w.t.Helper()
	d := w.drpc()
	change(&d.Spec)
	d.Generation++
	w.g.Expect(w.hub.Update(context.Background(), d)).To(Succeed())
}

// agent plays the agent of a cluster: the group reports what its spec asks for as done, or
// (busy) reports DataReady False for a secondary still in use.
func (w *world) agent(cluster string, busy bool) {
	w.t.Helper()
	v := w.vrg(cluster)
	w.g.Expect(v).NotTo(BeNil(), "%s has a group", cluster)
	set := func(t string, s metav1.ConditionStatus, reason string) {
		apimeta.SetStatusCondition(&v.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason, ObservedGeneration: v.Generation})
	}
	if v.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary {
		for _, t := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady} {
			set(t, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		}
		last := metav1.NewTime(w.now.Add(-time.Second))
		v.Status.State, v.Status.LastGroupSyncTime, v.Status.ObservedGeneration, v.Status.FinalSync = v1alpha1.StatePrimary, &last, v.Generation, nil
	} else if busy {
		set(v1alpha1.ConditionDataReady, metav1.ConditionFalse, v1alpha1.ReasonPVCInUse)
		v.Status.State = v1alpha1.StateUnknown
	} else {
		set(v1alpha1.ConditionDataReady, metav1.ConditionTrue, v1alpha1.ReasonSecondary)
		v.Status.State, v.Status.ObservedGeneration, v.Status.LastGroupSyncTime = v1alpha1.StateSecondary, v.Generation, nil
		if v.Spec.FinalSyncRequest != "" {
			v.Status.FinalSync = &v1alpha1.FinalSyncStatus{Request: v.Spec.FinalSyncRequest, CompletionTime: metav1.NewTime(w.now)}
		}
	}
	w.g.Expect(w.clusters[cluster].Status().Update(context.Background(), v)).To(Succeed())
}

// cond returns a condition of the DRPlacementControl.
func (w *world) cond(t string) metav1.Condition {
	w.t.Helper()
	c := apimeta.FindStatusCondition(w.drpc().Status.Conditions, t)
	w.g.Expect(c).NotTo(BeNil(), "condition %s", t)
	return *c
}

// decision returns the clusters the PlacementDecision names; nil when there is none.
func (w *world) decision() []string {
	pd := &ocmv1beta1.PlacementDecision{}
	if err := w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app-decision-1"}, pd); err != nil {
		w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		return nil
	}
	out := []string{}
	for _, d := range pd.Status.Decisions {
		out = append(out, d.ClusterName)
	}
	return out
}

// deployed runs the world to Deployed on east with west secondary.
func (w *world) deployed() {
	w.t.Helper()
	w.reconcile()
	w.agent("east", false)
	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseDeployed))
}

func TestDeployProtectsOnThePreferredClusterAndMakesThePeerSecondary(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeploying))
	w.g.Expect(d.Status.Progression).To(Equal(string(ProgressionWaitingForGroup)))
	east, west := w.vrg("east"), w.vrg("west")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionNone))
	w.g.Expect(east.Spec.KubeObjectProtection).NotTo(BeNil(), "self-contained mode captures objects")
	w.g.Expect(east.Spec.S3Profiles).To(HaveLen(2))
	w.g.Expect(west.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionFalse))

	w.agent("east", false)
	w.agent("west", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeployed))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("east"))
	w.g.Expect(d.Status.LastGroupSyncTime).NotTo(BeNil())
	for _, ct := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionPeerReady, v1alpha1.ConditionProtected} {
		w.g.Expect(w.cond(ct).Status).To(Equal(metav1.ConditionTrue), ct+": "+w.cond(ct).Message)
	}
	w.g.Expect(d.Status.VRGs).To(ConsistOf(
		And(HaveField("Cluster", "east"), HaveField("DataReady", metav1.ConditionTrue), HaveField("DataProtected", metav1.ConditionTrue),
			HaveField("Problems", BeEmpty()), HaveField("LastGroupSyncTime", Not(BeNil()))),
		And(HaveField("Cluster", "west"), HaveField("State", v1alpha1.StateSecondary), HaveField("DataReady", metav1.ConditionTrue),
			HaveField("Problems", BeEmpty()))))
}

func TestFailoverWithThePrimaryLostPromotesThePeerAndDemotesTheOldPrimaryWhenItReturns(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
	w.g.Expect(d.Status.ActionTarget).To(Equal("west"))
	w.g.Expect(d.Status.ActionStartTime).NotTo(BeNil())
	w.g.Expect(d.Status.LastGroupSyncTime).To(BeNil(), "cleared when the action starts")
	west := w.vrg("west")
	w.g.Expect(west.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	w.g.Expect(west.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Reason).To(Equal(v1alpha1.ReasonActionInProgress))

	// A restarted hub (a new reconciler) continues from what it observes.
	w.r = &Reconciler{Client: w.hub, Gateway: w.gw, Now: func() time.Time { return w.now }}
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
	w.now = w.now.Add(5 * time.Second)
	w.agent("west", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.g.Expect(d.Status.ActionDuration.Duration).To(Equal(5 * time.Second))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	pr := w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(pr.Reason).To(Equal(v1alpha1.ReasonPeerUnreachable))
	w.g.Expect(d.Status.Progression).To(Equal(string(ProgressionCleaningUp)))

	// east returns: its group is demoted with action Failover at once; PeerReady waits for
	// Secondary at the group's current generation.
	w.gw.SetDown("east", false)
	w.reconcile()
	east := w.vrg("east")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.agent("east", true)
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionFalse))
	w.agent("east", false)
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
	w.g.Expect(w.drpc().Status.Progression).To(Equal(string(ProgressionCompleted)))
}

func TestRelocateIsRefusedWithAReasonUnlessBothClustersAreReadyAndTheDataProtected(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("west", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeployed), "nothing half-done")
	aa := w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(aa.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(aa.Reason).To(Equal(v1alpha1.ReasonPeerUnreachable))
	w.g.Expect(aa.Message).To(ContainSubstring("west is unreachable"))
	w.g.Expect(aa.Message).To(ContainSubstring("use failover"))
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))

	// west back but its group not Secondary: PeerNotReady.
	w.gw.SetDown("west", false)
	w.agent("west", true)
	w.reconcile() // observes PeerReady False
	w.reconcile()
	aa = w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(aa.Reason).To(Equal(v1alpha1.ReasonPeerNotReady))
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseDeployed))
}

func TestRelocatePromotesTheTargetOnlyAfterTheFinalSync(t *testing.T) {
	w := newWorld(t, placementDRPC())
	w.deployed()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}))
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRelocating))
	east := w.vrg("east")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionRelocate))
	w.g.Expect(east.Spec.FinalSyncRequest).To(Equal(finalSyncRequest(&d.Status)))
	w.g.Expect(w.decision()).To(Equal([]string{"east"}), "the application runs until east's agent acts on the relocation")

	w.agent("east", true)
	w.reconcile()
	w.g.Expect(w.decision()).To(BeEmpty(), "the application is stopped before the final sync")
	w.g.Expect(w.drpc().Status.Progression).To(Equal(string(ProgressionStoppingApp)))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "not promoted before the final sync")

	w.agent("east", false)
	w.reconcile()
	west := w.vrg("west")
	w.g.Expect(west.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	w.g.Expect(west.Spec.Action).To(Equal(v1alpha1.ActionRelocate))
	w.g.Expect(w.decision()).To(BeEmpty(), "the application is placed once the target is promoted")
	// The hand-off gives east west's PVCs to receive: east's group is a generation ahead of
	// its status for a while. The promotion asked is not taken back, nor asked again.
	east = w.vrg("east")
	east.Generation++
	w.g.Expect(w.clusters["east"].Update(context.Background(), east)).To(Succeed())
	gen := w.vrg("west").Generation
	w.reconcile()
	w.g.Expect(w.drpc().Status.Progression).To(Equal(string(ProgressionPromotingTarget)))
	w.g.Expect(w.vrg("west").Generation).To(Equal(gen), "the target's promotion is asked once")
	w.agent("east", false)
	w.agent("west", false)
	w.reconcile()
	d = w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRelocated))
	w.g.Expect(d.Status.CurrentPrimary).To(Equal("west"))
	w.g.Expect(w.decision()).To(Equal([]string{"west"}))
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
	// Settled, the hub asks nothing new of the groups: their generations stay.
	gen = w.vrg("east").Generation
	eastSpec := w.vrg("east").Spec
	w.reconcile()
	w.g.Expect(w.vrg("east").Generation).To(Equal(gen))
	w.g.Expect(w.vrg("east").Spec).To(Equal(eastSpec))
}

func TestPlacementKeepsAFailedOverClusterInTheDecisionUntilItsGroupAcknowledgesDemotion(t *testing.T) {
	w := newWorld(t, placementDRPC())
	w.deployed()
	w.gw.SetDown("east", true)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}), "west is not placed before its PVCs are restored")
	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.g.Expect(w.decision()).To(Equal([]string{"west", "east"}), "east stays named while it cannot be demoted")

	w.gw.SetDown("east", false)
	w.reconcile()
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	w.g.Expect(w.decision()).To(Equal([]string{"west", "east"}), "east stays until its agent acknowledges the demotion")
	w.agent("east", true) // acknowledged, PVCs still in use by the application
	w.reconcile()
	w.g.Expect(w.decision()).To(Equal([]string{"west"}))
	w.agent("east", false)
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
	w.g.Expect(w.decision()).To(Equal([]string{"west"}), "a cluster is never added back")
}

func TestAFailoverOvertakesARelocationButNotTheReverse(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcile()
	w.agent("east", true) // stuck: a consumer never goes away
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseRelocating))

	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile()
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
	w.g.Expect(w.vrg("east").Spec.Action).To(Equal(v1alpha1.ActionFailover))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "east answers: it is demoted first")
	// East never demotes (the consumer stays); it stops answering: west is promoted without it.
	w.gw.SetDown("east", true)
	w.reconcile()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))

	// Relocating back while the failover runs is postponed, with the reason.
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "east"
	})
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))
	aa := w.cond(v1alpha1.ConditionActionAccepted)
	w.g.Expect(aa.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(aa.Reason).To(Equal(v1alpha1.ReasonActionInProgress))
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
}

func TestBadInputIsReportedAndNothingIsDone(t *testing.T) {
	t.Run("a failover to a cluster outside the policy", func(t *testing.T) {
		d := appDRPC()
		d.Spec.FailoverCluster = "north"
		w := newWorld(t, d)
		w.reconcile()
		v := w.cond(v1alpha1.ConditionValidated)
		w.g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonClusterNotInPolicy))
		w.g.Expect(v.Message).To(ContainSubstring("north is not one of the clusters of DRPolicy pair (east, west)"))
		w.g.Expect(w.vrg("east")).To(BeNil())
		w.g.Expect(w.vrg("west")).To(BeNil())
	})
	t.Run("a namespace already protected by another DRPlacementControl", func(t *testing.T) {
		w := newWorld(t, appDRPC())
		w.deployed()
		other := appDRPC()
		other.Name = "other"
		other.CreationTimestamp = metav1.NewTime(w.now.Add(time.Hour))
		w.g.Expect(w.hub.Create(context.Background(), other)).To(Succeed())
		w.key = client.ObjectKeyFromObject(other)
		w.reconcile()
		v := w.cond(v1alpha1.ConditionValidated)
		w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNamespaceConflict))
		w.g.Expect(v.Message).To(ContainSubstring("namespace app is already protected by DRPlacementControl app/app"))
		w.g.Expect(w.vrg("east")).To(BeNil(), "no group for the conflicting DRPlacementControl")
	})
	t.Run("a policy that does not exist", func(t *testing.T) {
		d := appDRPC()
		d.Spec.DRPolicyRef.Name = "missing"
		w := newWorld(t, d)
		w.reconcile()
		v := w.cond(v1alpha1.ConditionValidated)
		w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNotFound))
		w.g.Expect(v.Message).To(ContainSubstring("DRPolicy missing does not exist"))
	})
}

func TestDeletingTheDRPCDeletesBothGroupsThenReleasesTheFinalizer(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.gw.SetDown("west", true)
	w.g.Expect(w.hub.Delete(context.Background(), w.drpc())).To(Succeed())
	w.reconcile()
	w.g.Expect(w.vrg("east")).To(BeNil(), "the fake has no agent finalizer: deleted at once")
	d := w.drpc()
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeleting))
	w.g.Expect(w.cond(v1alpha1.ConditionAvailable).Message).To(ContainSubstring("west is unreachable"))
	w.gw.SetDown("west", false)
	w.reconcile()
	w.g.Expect(w.vrg("west")).To(BeNil())
	w.reconcile()
	err := w.hub.Get(context.Background(), w.key, &v1alpha1.DRPlacementControl{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the finalizer is removed once both groups are gone")
}

func TestTheHubHandsVolSyncDestinationsButNoKeyFromTheSecondaryToThePrimary(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	ctx := context.Background()
	capacity := resource.MustParse("1Gi")

	// east's primary reports a VolSync PVC: west's secondary is asked to receive it.
	east := w.vrg("east")
	east.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{
		{Namespace: "app", Name: "data-db-0", StorageClassName: "lab-file", Backend: v1alpha1.BackendVolSync,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: &capacity},
		{Namespace: "app", Name: "block", Backend: v1alpha1.BackendVolRep, Capacity: &capacity},
	}
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	w.agent("west", false) // west is Secondary for its new spec, with no destination yet
	w.reconcile()
	pr := w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse), "a VolSync peer without a destination is not ready")
	w.g.Expect(pr.Message).To(ContainSubstring("waiting for west's VolSync destination of PVC app/data-db-0"))
	west := w.vrg("west")
	w.g.Expect(west.Spec.VolSync).NotTo(BeNil())
	w.g.Expect(west.Spec.VolSync.ReceivePVCs).To(ConsistOf(v1alpha1.VolSyncReceivePVC{
		PVCNamespace: "app", PVCName: "data-db-0", StorageClassName: "lab-file",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: capacity,
	}))

	// west reports its destination and holds its key: the destination reaches east, the key
	// does not go through the hub (the agents pass it through the stores).
	key := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: volsync.KeySecretName("app", "data-db-0")},
		Data:       map[string][]byte{"psk.txt": []byte("volsync:00ff")},
	}
	w.g.Expect(w.clusters["west"].Create(ctx, key)).To(Succeed())
	west = w.vrg("west")
	west.Status.VolSyncDestinations = []v1alpha1.VolSyncDestination{{PVCNamespace: "app", PVCName: "data-db-0", Address: "127.0.0.1:30000", KeySecretName: key.Name}}
	w.g.Expect(w.clusters["west"].Status().Update(ctx, west)).To(Succeed())
	w.reconcile()
	east = w.vrg("east")
	w.g.Expect(east.Spec.VolSync).NotTo(BeNil())
	w.g.Expect(east.Spec.VolSync.Destinations).To(Equal(west.Status.VolSyncDestinations))
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue), "the destination is reported and handed over")
	err := w.clusters["east"].Get(ctx, client.ObjectKeyFromObject(key), &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub copied west's key Secret onto east: %v", err)

	// West unreachable: east keeps the destinations it has.
	w.gw.SetDown("west", true)
	w.reconcile()
	w.g.Expect(w.vrg("east").Spec.VolSync.Destinations).To(HaveLen(1))
}

func TestPeerReadyWaitsForACopyOfEveryPVCOnThePeer(t *testing.T) {
	w := newWorld(t, placementDRPC())
	w.deployed()
	ctx := context.Background()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))

	// The workload is still being created: east's group protects no PVC and has no sync.
	east := w.vrg("east")
	east.Status.LastGroupSyncTime, east.Status.ProtectedPVCs = nil, nil
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	pr := w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse), "a peer without a copy of the data is not ready")
	w.g.Expect(pr.Message).To(ContainSubstring("waiting for east to protect the application's PVCs"))

	// Its PVC appears and has not synced yet.
	capacity := resource.MustParse("1Gi")
	east = w.vrg("east")
	east.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: "app", Name: "data", Backend: v1alpha1.BackendVolRep, Capacity: &capacity}}
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	pr = w.cond(v1alpha1.ConditionPeerReady)
	w.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(pr.Message).To(ContainSubstring("waiting for the first sync of every PVC from east"))

	// The first sync completes: west holds a copy.
	east = w.vrg("east")
	last := metav1.NewTime(w.now)
	east.Status.LastGroupSyncTime = &last
	w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
	w.reconcile()
	w.g.Expect(w.cond(v1alpha1.ConditionPeerReady).Status).To(Equal(metav1.ConditionTrue))
}
