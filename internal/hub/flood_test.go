package hub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// A tenant floods the hub with DRPlacementControls that all protect its one namespace: the first
// is Validated, every other one is refused (NamespaceConflict) and looked at again now and then.
// Another tenant's failover must not pay for it, and neither must the hub's API server: no
// refused DRPlacementControl may cost a list of its namespace's DRPlacementControls. make test
// floods with floodTestDRPCs; make bench-flood with 10,000 (floodEnv), and docs/benchmarks.md
// keeps the figures it prints.

// floodTestDRPCs is the flood of the test that runs in make test.
const floodTestDRPCs = 200

// floodEnv sets the size of the flood (make bench-flood: 10000).
const floodEnv = "DROVER_FLOOD_DRPCS"

// flood creates n DRPlacementControls in namespace ns, all protecting ns, the oldest first, and waits until the hub has judged each: the oldest Validated, the others not
// (NamespaceConflict). It returns their keys, the oldest first.
func flood(g *WithT, h client.Client, ns string, n int) []client.ObjectKey {
	ctx := context.Background()
	keys := make([]client.ObjectKey, n)
	create := func(i int) {
		d := &v1alpha1.DRPlacementControl{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("flood-%05d", i)},
			Spec: v1alpha1.DRPlacementControlSpec{
				DRPolicyRef: v1alpha1.PolicyReference{Name: policyVolRep}, PreferredCluster: lab.East,
				PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}, ProtectedNamespaces: []string{ns},
			},
		}
		g.Expect(client.IgnoreAlreadyExists(h.Create(ctx, d))).To(Succeed())
		keys[i] = client.ObjectKeyFromObject(d)
	}
	create(0)
	// The first is the oldest by a second, whatever the order of the others' creations.
	time.Sleep(1100 * time.Millisecond)
	rest := make([]int, n-1)
	for i := range rest {
		rest[i] = i + 1
	}
	inParallel(rest, create)
	// Listing a large flood is the test's own load on the API server: not too often.
	poll := 2 * time.Second * time.Duration(max(1, n/1000))
	g.Eventually(func(g Gomega) {
		list := &v1alpha1.DRPlacementControlList{}
		g.Expect(h.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		judged := 0
		for i := range list.Items {
			d := &list.Items[i]
			c := cond(d, v1alpha1.ConditionValidated)
			switch {
			case d.Name == keys[0].Name && c.Status == metav1.ConditionTrue:
				judged++
			case d.Name != keys[0].Name && c.Reason == v1alpha1.ReasonNamespaceConflict:
				judged++
			}
		}
		g.Expect(judged).To(Equal(n), "DRPlacementControls judged")
	}).WithTimeout(30*time.Minute).WithPolling(poll).Should(Succeed(), "the hub judges every DRPlacementControl of the flood")
	return keys
}

// inParallel calls do on every item, 16 at a time.
func inParallel[T any](items []T, do func(T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for it := range work {
				do(it)
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// unflood deletes the flood and waits until it is gone.
func unflood(g *WithT, h client.Client, ns string, keys []client.ObjectKey) {
	ctx := context.Background()
	inParallel(keys, func(k client.ObjectKey) {
		d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		g.Expect(client.IgnoreNotFound(h.Delete(ctx, d))).To(Succeed())
	})
	g.Eventually(func(g Gomega) {
		list := &v1alpha1.DRPlacementControlList{}
		g.Expect(h.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}).WithTimeout(30*time.Minute).WithPolling(5*time.Second).Should(Succeed(), "the flood is deleted")
}

// drpcLists reads the hub API server's count of LIST requests of DRPlacementControls.
func drpcLists(g Gomega) float64 { return hubLists(g, "drplacementcontrols") }

// failoverTimes fails the application over to each cluster in turn and returns each failoverTime.
func failoverTimes(a *app, clusters []string) []time.Duration {
	times := make([]time.Duration, 0, len(clusters))
	for _, c := range clusters {
		times = append(times, failoverTime(a, c))
	}
	return times
}

// failoverTime fails the application over to cluster and returns the time from the ask to the
// DRPlacementControl FailedOver and Available there.
func failoverTime(a *app, cluster string) time.Duration {
	asked := a.ask(v1alpha1.ActionFailover, cluster)
	a.settledOn(v1alpha1.PhaseFailedOver, cluster, false, "the application fails over to "+cluster)
	return time.Since(asked)
}

// TestAFloodOfInvalidDRPCsCostsTheHubsAPIServerNoListEach floods the hub with floodTestDRPCs
// DRPlacementControls of one namespace ($DROVER_FLOOD_DRPCS with make bench-flood): over a window
// longer than the period at which a refused one is looked at again, the hub lists
// DRPlacementControls from its API server less than once per 4 of them (it judges each from its
// own index), and another tenant's application still fails over. The failover's times, on the
// idle hub and beside the flood, are the benchmark's figures: printed, never asserted. The
// benchmark fails over to west and back both idle and beside the flood; make test's slice fails
// over once idle (to west) and once beside the flood (back to east).
func TestAFloodOfInvalidDRPCsCostsTheHubsAPIServerNoListEach(t *testing.T) {
	n := benchEnvInt(floodEnv, floodTestDRPCs)
	victim := protectedOnEast(t, "hub-flood-victim")
	g := victim.g
	idleTo, besideTo := []string{lab.West, lab.East}, []string{lab.West, lab.East}
	if n <= floodTestDRPCs {
		idleTo, besideTo = []string{lab.West}, []string{lab.East}
	}
	idle := failoverTimes(victim, idleTo)
	const ns = "hub-flood"
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	_ = newApp(t, ns)
	started := time.Now()
	keys := flood(g, h, ns, n)
	t.Cleanup(func() { unflood(g, h, ns, keys) })
	t.Logf("%d DRPlacementControls of one namespace created and judged by the hub in %s", n, time.Since(started).Round(time.Second))

	before := drpcLists(g)
	time.Sleep(35 * time.Second)
	lists := drpcLists(g) - before
	t.Logf("%d DRPlacementControls of one namespace, %d refused: %.0f LISTs of DRPlacementControls by the hub in 35 s", n, n-1, lists)
	flooded := failoverTimes(victim, besideTo)
	for i := range idle {
		t.Logf("another tenant's failover: to %s %s on an idle hub, to %s %s beside the flood (%.2f times)", idleTo[i],
			idle[i].Round(time.Millisecond), besideTo[i], flooded[i].Round(time.Millisecond), flooded[i].Seconds()/idle[i].Seconds())
	}
	g.Expect(lists).To(BeNumerically("<", n/4), "the hub lists DRPlacementControls for each refused one")
}
