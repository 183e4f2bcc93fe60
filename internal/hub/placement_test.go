package hub_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/deployer"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// The story of a StatefulSet deployed by a GitOps tool (the lab's deployer, following the
// PlacementDecision drover writes) and protected by placementRef: deploy → protected; east
// lost, failover to west (the hub killed and restarted in the middle) → east back, cleaned
// (the deployer removes the app only once east's group acknowledged its demotion) and demoted
// with its PVCs kept → PeerReady with no human step; relocate back to east (the hub killed and
// restarted in the middle) with no record lost.
func TestPlacementModeFailsOverAndRelocatesAStatefulSetDeployedByAGitOpsTool(t *testing.T) {
	a := newApp(t, "hub-placement")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, err := labtest.RepoRoot()
	a.g.Expect(err).NotTo(HaveOccurred())
	manifests, err := deployer.LoadDir(filepath.Join(root, "internal", "lab", "deployer", "testdata", "app"))
	a.g.Expect(err).NotTo(HaveOccurred())
	clusters := map[string]client.Client{}
	for name, cl := range a.clusters {
		clusters[name] = cl
	}
	d := &deployer.Deployer{Hub: a.hub, Clusters: clusters, Namespace: a.ns, Placement: "db", Manifests: manifests, Interval: 500 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the deployer: %v", err)
		}
	}()

	a.g.Expect(a.hub.Create(ctx, a.drpcFor(true))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is deployed on east and protected")
	handles := a.volumes(lab.East)
	eastWriters := a.writing(lab.East, handles)
	a.g.Eventually(func(g Gomega) {
		g.Expect(d.Status().Decided).To(Equal([]string{lab.East}))
	}).Should(Succeed())

	// Failover with east lost; the hub dies while it runs and a new one finishes it.
	time.Sleep(interval / 2)
	lost, _ := a.lose(lab.East, handles)
	asked := a.ask(v1alpha1.ActionFailover, lab.West)
	a.waitPhase(v1alpha1.PhaseFailingOver)
	stop("hub")
	a.g.Expect(startHub()).To(Succeed())
	failedOver := a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the application fails over to west")
	t.Logf("failover: request → Available in %s (actionDuration %s)", time.Since(asked).Round(time.Millisecond), failedOver.Status.ActionDuration.Duration)
	pr := cond(failedOver, v1alpha1.ConditionPeerReady)
	a.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse))
	a.g.Expect(pr.Reason).To(Equal(v1alpha1.ReasonPeerUnreachable))
	a.g.Expect(slices.Contains(d.Status().Decided, lab.East)).To(BeTrue(), "east stays in the decision while it cannot be demoted")
	a.expectFailoverKept(lab.West, handles, eastWriters, lost)
	a.g.Eventually(func(g Gomega) {
		drc := &v1alpha1.DRCluster{}
		g.Expect(a.hub.Get(ctx, client.ObjectKey{Name: lab.East}, drc)).To(Succeed())
		r := metav1.Condition{}
		for _, c := range drc.Status.Conditions {
			if c.Type == v1alpha1.ConditionReachable {
				r = c
			}
		}
		g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(r.Reason).To(Equal(v1alpha1.ReasonUnreachable))
		g.Expect(r.Message).To(ContainSubstring("unreachable since"))
	}).Should(Succeed(), "east's DRCluster turns unreachable after the grace period, with the last error")
	westWriters := a.writing(lab.West, handles)

	// East returns: demoted first, then the deployer removes the app; PVCs kept; PeerReady.
	a.restore(lab.East)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east's group is Secondary with no human step")
	a.gone(lab.East)
	a.g.Expect(d.Status().Decided).To(Equal([]string{lab.West}))
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters), "west's application kept running meanwhile")

	// Relocate back to east; the hub dies while it runs and a new one finishes it.
	asked = a.ask(v1alpha1.ActionRelocate, lab.East)
	a.waitPhase(v1alpha1.PhaseRelocating)
	stop("hub")
	a.g.Expect(startHub()).To(Succeed())
	relocated := a.settledOn(v1alpha1.PhaseRelocated, lab.East, false, "the application relocates to east")
	t.Logf("relocate: request → Available in %s (actionDuration %s)", time.Since(asked).Round(time.Millisecond), relocated.Status.ActionDuration.Duration)
	a.expectNothingLost(lab.West, lab.East, handles)
	a.writing(lab.East, handles)
	a.settledOn(v1alpha1.PhaseRelocated, lab.East, true, "west's group is Secondary again")
	a.gone(lab.West)
}
