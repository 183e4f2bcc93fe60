//go:build argocd

package argocd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/argocd"
)

// env is what a test works with: a client per lab cluster.
type env struct {
	hub, east, west client.Client
}

func newEnv(g Gomega) env {
	hub, err := testLab.Client(lab.Hub, ocmv1beta1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	east, err := testLab.Client(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	west, err := testLab.Client(lab.West)
	g.Expect(err).NotTo(HaveOccurred())
	return env{hub: hub, east: east, west: west}
}

func (e env) cluster(name string) client.Client {
	if name == lab.East {
		return e.east
	}
	return e.west
}

func other(cluster string) string {
	if cluster == lab.East {
		return lab.West
	}
	return lab.East
}

// setDecision creates or updates the placement's PlacementDecision in Argo CD's namespace so
// that it names cluster. The decisions live in the status subresource.
func setDecision(ctx context.Context, g Gomega, hub client.Client, placement, cluster string) {
	pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: argocd.Namespace, Name: placement + "-decision-1",
		Labels: map[string]string{ocmv1beta1.PlacementLabel: placement},
	}}
	if err := hub.Create(ctx, pd); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		pd.Status.Decisions = []ocmv1beta1.ClusterDecision{{ClusterName: cluster, Reason: "test"}}
		g.Expect(hub.Status().Update(ctx, pd)).To(Succeed())
	}).Should(Succeed())
}

// expectRunning checks that the demo app's StatefulSet and Service exist on the cluster and its
// three pods run.
func expectRunning(ctx context.Context, g Gomega, cl client.Client, namespace string) {
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}} {
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, obj)).To(Succeed())
		g.Expect(obj.GetDeletionTimestamp()).To(BeNil())
	}
	pods := &corev1.PodList{}
	g.Expect(cl.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	for _, pod := range pods.Items {
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", pod.Name)
	}
}

// expectPruned checks that the app's Application is gone from the hub and its objects and pods
// from the cluster.
func expectPruned(ctx context.Context, g Gomega, e env, appSet, cluster, namespace string) {
	_, err := argocd.ApplicationStatus(ctx, e.hub, argocd.ApplicationName(appSet, cluster))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s: %v", argocd.ApplicationName(appSet, cluster), err)
	cl := e.cluster(cluster)
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}} {
		err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T db on %s: %v", obj, cluster, err)
	}
	pods := &corev1.PodList{}
	g.Expect(cl.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty())
}

// pvcUIDs returns the UIDs of the StatefulSet's three PVCs once they are Bound.
func pvcUIDs(ctx context.Context, g Gomega, cl client.Client, namespace string) map[string]types.UID {
	uids := map[string]types.UID{}
	for i := range 3 {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("data-db-%d", i)}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "PVC %s", pvc.Name)
		g.Expect(pvc.DeletionTimestamp).To(BeNil(), "PVC %s", pvc.Name)
		uids[pvc.Name] = pvc.UID
	}
	return uids
}

// expectReady waits until the Application is Synced and Healthy.
func expectReady(ctx context.Context, g Gomega, hub client.Client, app string, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		st, err := argocd.ApplicationStatus(ctx, hub, app)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Ready()).To(BeTrue(), "Application %s is %s/%s", app, st.Sync, st.Health)
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(Succeed(), "Application %s Synced and Healthy", app)
}

// move changes the placement's decision to cluster, refreshes the ApplicationSet when asked,
// and returns the time from the decision change until the Application for cluster is Synced
// and Healthy.
func move(ctx context.Context, g Gomega, hub client.Client, appSet, placement, cluster string, refresh bool, timeout time.Duration) time.Duration {
	setDecision(ctx, g, hub, placement, cluster)
	changed := time.Now()
	if refresh {
		g.Expect(argocd.RefreshApplicationSet(ctx, hub, appSet)).To(Succeed())
	}
	expectReady(ctx, g, hub, argocd.ApplicationName(appSet, cluster), timeout)
	return time.Since(changed)
}

// deploy creates the decision for cluster and the ApplicationSet, waits until the app runs
// there, and deletes the ApplicationSet and decision when the test ends.
func deploy(ctx context.Context, tb testing.TB, g Gomega, e env, appSet, placement, namespace, cluster string) {
	setDecision(ctx, g, e.hub, placement, cluster)
	g.Expect(argo.CreateApplicationSet(ctx, e.hub, argocd.AppSetOptions{Name: appSet, Placement: placement, AppNamespace: namespace})).To(Succeed())
	tb.Cleanup(func() {
		as := &unstructured.Unstructured{}
		as.SetGroupVersionKind(argocd.ApplicationSetGVK)
		as.SetNamespace(argocd.Namespace)
		as.SetName(appSet)
		_ = e.hub.Delete(ctx, as)
		_ = e.hub.Delete(ctx, &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: argocd.Namespace, Name: placement + "-decision-1"}})
	})
	expectReady(ctx, g, e.hub, argocd.ApplicationName(appSet, cluster), 2*time.Minute)
	g.Eventually(func(g Gomega) { expectRunning(ctx, g, e.cluster(cluster), namespace) }).
		WithTimeout(time.Minute).Should(Succeed(), "the demo app runs on %s", cluster)
}

func TestStartingAgainStartsNothingAndStatusShowsEveryComponent(t *testing.T) {
	g := NewWithT(t)
	before, err := argo.Status()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.Healthy).To(BeTrue())
	g.Expect(before.Components).To(HaveLen(4))
	for _, c := range before.Components {
		g.Expect(c.Running).To(BeTrue(), c.Name)
		g.Expect(c.RSSKiB).To(BeNumerically(">", 0), c.Name)
	}
	logRSS(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	again, err := startArgoCD(ctx, testLab)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Ports()).To(Equal(argo.Ports()), "a running instance keeps its ports")
	after, err := again.Status()
	g.Expect(err).NotTo(HaveOccurred())
	pids := func(st argocd.Status) map[string]int {
		m := map[string]int{}
		for _, c := range st.Components {
			m[c.Name] = c.PID
		}
		return m
	}
	g.Expect(pids(after)).To(Equal(pids(before)), "the same processes")

	opened, err := argocd.Open(argo.Dir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opened.Ports()).To(Equal(argo.Ports()))
}

func TestTheApplicationFollowsThePlacementDecisionThereAndBackWithPruneOnTheOldCluster(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	e := newEnv(g)
	const appSet, placement, ns = "db-move", "db-move-placement", "argo-move"

	// Decision east: Argo CD deploys the app from git on east only.
	deploy(ctx, t, g, e, appSet, placement, ns, lab.East)
	var eastPVCs map[string]types.UID
	g.Eventually(func(g Gomega) { eastPVCs = pvcUIDs(ctx, g, e.east, ns) }).Should(Succeed())
	_, err := argocd.ApplicationStatus(ctx, e.hub, argocd.ApplicationName(appSet, lab.West))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Application for west: %v", err)
	g.Expect(e.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &appsv1.StatefulSet{})).NotTo(Succeed())

	// Decision west, and the refresh drover sends: the app moves, east is pruned, its PVCs stay.
	took := move(ctx, g, e.hub, appSet, placement, lab.West, true, 90*time.Second)
	t.Logf("decision east -> west with the refresh annotation: Synced/Healthy on west after %.1f s", took.Seconds())
	g.Eventually(func(g Gomega) { expectRunning(ctx, g, e.west, ns) }).Should(Succeed(), "the demo app runs on west")
	g.Eventually(func(g Gomega) { expectPruned(ctx, g, e, appSet, lab.East, ns) }).Should(Succeed(), "Argo CD prunes the app from east")
	g.Expect(pvcUIDs(ctx, g, e.east, ns)).To(Equal(eastPVCs), "east keeps its PVCs: Argo CD did not create them")
	// The controller removes the annotation once it has regenerated, so the next decision change
	// can set it again and be noticed (setting an annotation that is already there is no event).
	g.Eventually(func(g Gomega) {
		as := &unstructured.Unstructured{}
		as.SetGroupVersionKind(argocd.ApplicationSetGVK)
		g.Expect(e.hub.Get(ctx, client.ObjectKey{Namespace: argocd.Namespace, Name: appSet}, as)).To(Succeed())
		g.Expect(as.GetAnnotations()).NotTo(HaveKey(argocd.RefreshAnnotation))
	}).Should(Succeed(), "the ApplicationSet controller clears the refresh annotation")
	app, err := argocd.ApplicationStatus(ctx, e.hub, argocd.ApplicationName(appSet, lab.West))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(app.Destination).To(Equal(lab.West))

	// Back to east: its StatefulSet takes the PVCs it left there, and west is pruned in turn.
	took = move(ctx, g, e.hub, appSet, placement, lab.East, true, 90*time.Second)
	t.Logf("decision west -> east with the refresh annotation: Synced/Healthy on east after %.1f s", took.Seconds())
	g.Eventually(func(g Gomega) { expectRunning(ctx, g, e.east, ns) }).Should(Succeed(), "the demo app runs on east again")
	g.Expect(pvcUIDs(ctx, g, e.east, ns)).To(Equal(eastPVCs), "east's pods use the PVCs they had")
	g.Eventually(func(g Gomega) { expectPruned(ctx, g, e, appSet, lab.West, ns) }).Should(Succeed(), "Argo CD prunes the app from west")
	logRSS(t)
}

// logRSS logs the memory of Argo CD's processes.
func logRSS(tb testing.TB) {
	st, err := argo.Status()
	if err != nil {
		tb.Errorf("failed to read Argo CD's status: %v", err)
		return
	}
	var sum int64
	for _, c := range st.Components {
		tb.Logf("%s: pid %d, %d MiB", c.Name, c.PID, c.RSSKiB/1024)
		sum += c.RSSKiB
	}
	tb.Logf("Argo CD in all: %d MiB", sum/1024)
}

// BenchmarkDecisionToSyncedHealthy measures the time from a PlacementDecision change to the
// Application Synced and Healthy on the newly decided cluster, moving the demo app back and
// forth, with drover's refresh annotation and without it (then the ApplicationSet controller
// reads the decision on its requeue, 180 s by default, so that case takes minutes):
//
//	go test -tags argocd -run '^$' -bench . -benchtime 1x ./internal/lab/argocd/
func BenchmarkDecisionToSyncedHealthy(b *testing.B) {
	for _, refresh := range []bool{true, false} {
		name := "without-refresh"
		if refresh {
			name = "with-refresh"
		}
		b.Run(name, func(b *testing.B) {
			g := NewWithT(b)
			g.SetDefaultEventuallyTimeout(90 * time.Second)
			ctx := context.Background()
			e := newEnv(g)
			appSet, placement, ns := "db-bench-"+name, "bench-"+name, "bench-"+name
			deploy(ctx, b, g, e, appSet, placement, ns, lab.East)
			from := lab.East
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				to := other(from)
				took := move(ctx, g, e.hub, appSet, placement, to, refresh, 5*time.Minute)
				b.StopTimer()
				total += took
				b.Logf("%s: decision %s -> %s, Synced/Healthy after %.1f s", name, from, to, took.Seconds())
				g.Eventually(func(g Gomega) { expectPruned(ctx, g, e, appSet, from, ns) }).Should(Succeed())
				from = to
				b.StartTimer()
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/move")
		})
	}
}
