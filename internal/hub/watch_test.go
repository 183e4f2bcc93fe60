package hub_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// The hub watches the managed clusters' groups instead of polling them: its settled safety
// requeue is two minutes and its requeue while a cluster is away thirty seconds, so these tests
// pass only through the gateway's watches and its probes' notifications.

// emptyApp protects a namespace with no PVC on east: its groups are ready at once.
func emptyApp(t *testing.T, ns string) *app {
	a := newApp(t, ns)
	ctx := context.Background()
	a.g.Expect(a.clusters[lab.East].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, false, "the empty application is protected on east")
	t.Cleanup(func() {
		_ = a.hub.Delete(context.Background(), a.drpc(a.g))
		a.g.Eventually(func(g Gomega) {
			d := &v1alpha1.DRPlacementControl{}
			err := a.hub.Get(context.Background(), a.key, d)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the DRPlacementControl is still there: %s",
				cond(d, v1alpha1.ConditionAvailable).Message)
		}).Should(Succeed())
	})
	return a
}

func TestAGroupChangeOnAManagedClusterReachesItsDRPCAtOnce(t *testing.T) {
	a := emptyApp(t, "hub-watch-change")
	ctx := context.Background()
	// East's agent is stopped so that nothing but the test writes the group's status.
	stop(lab.East)
	t.Cleanup(func() {
		if err := startAgent(lab.East); err != nil {
			t.Errorf("failed to start east's agent again: %v", err)
		}
	})
	east := a.clusters[lab.East]
	synced := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	vrg := &v1alpha1.VolumeReplicationGroup{}
	a.g.Expect(east.Get(ctx, a.key, vrg)).To(Succeed())
	before := vrg.DeepCopy()
	vrg.Status.LastGroupSyncTime = &synced
	a.g.Expect(east.Status().Patch(ctx, vrg, client.MergeFrom(before))).To(Succeed())
	changed := time.Now()
	a.g.Eventually(func(g Gomega) {
		d := a.drpc(g)
		g.Expect(d.Status.LastGroupSyncTime).NotTo(BeNil())
		g.Expect(d.Status.LastGroupSyncTime.Time).To(BeTemporally("==", synced.Time))
	}).WithTimeout(5*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(),
		"the group's new last sync reaches the DRPlacementControl without waiting for a requeue")
	t.Logf("a group status change on east reached the DRPlacementControl in %s", time.Since(changed).Round(time.Millisecond))
}

func TestAReturningClusterIsNoticedWithoutPolling(t *testing.T) {
	a := emptyApp(t, "hub-watch-return")
	a.g.Eventually(func(g Gomega) {
		g.Expect(cond(a.drpc(g), v1alpha1.ConditionPeerReady).Reason).NotTo(Equal(v1alpha1.ReasonPeerUnreachable))
	}).Should(Succeed())
	stop(lab.West)
	a.g.Expect(testLab.Stop(lab.West)).To(Succeed())
	restarted := false
	t.Cleanup(func() {
		if restarted {
			return
		}
		if err := testLab.Start(context.Background(), lab.West); err != nil {
			t.Errorf("failed to start west again: %v", err)
		}
		if err := startAgent(lab.West); err != nil {
			t.Errorf("failed to start west's agent again: %v", err)
		}
	})
	a.g.Eventually(func(g Gomega) {
		c := cond(a.drpc(g), v1alpha1.ConditionPeerReady)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPeerUnreachable), c.Message)
	}).WithTimeout(10*time.Second).Should(Succeed(), "the hub notices that west is gone")
	// Longer than the DRCluster's grace period, so Reachable has turned False too.
	time.Sleep(5 * time.Second)
	starting := time.Now()
	a.g.Expect(testLab.Start(context.Background(), lab.West)).To(Succeed())
	back := time.Now()
	a.g.Expect(startAgent(lab.West)).To(Succeed())
	restarted = true
	a.g.Eventually(func(g Gomega) {
		c := cond(a.drpc(g), v1alpha1.ConditionPeerReady)
		g.Expect(c.Reason).NotTo(Equal(v1alpha1.ReasonPeerUnreachable), c.Message)
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(),
		"the hub notices west is back well before its 30 s safety requeue")
	t.Logf("west started in %s (its API server answers before that); the DRPlacementControl saw it back %s after",
		back.Sub(starting).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}
