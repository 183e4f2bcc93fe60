package deployer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/deployer"
	"github.com/drover-io/drover/internal/lab/storage"
)

// appDir holds the demo application every test deploys.
const appDir = "testdata/app"

// placement is the placement name of every test; each test has its own namespace.
const placement = "db-placement"

// env is what a test of the deployer works with: a client per lab cluster.
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

// startDeployer runs a deployer of the demo app for the placement in namespace until the test
// ends, with a short interval so tests do not wait on it.
func startDeployer(t *testing.T, g Gomega, e env, namespace string) *deployer.Deployer {
	t.Helper()
	manifests, err := deployer.LoadDir(appDir)
	g.Expect(err).NotTo(HaveOccurred())
	d := &deployer.Deployer{
		Hub:       e.hub,
		Clusters:  map[string]client.Client{lab.East: e.east, lab.West: e.west},
		Namespace: namespace, Placement: placement,
		Manifests: manifests,
		Interval:  200 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), testr.New(t)))
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the deployer failed: %v", err)
		}
	})
	return d
}

// setDecision creates or updates the placement's decision on the hub to name clusters.
func setDecision(ctx context.Context, g Gomega, e env, namespace string, clusters ...string) {
	pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: placement + "-decision-1",
		Labels: map[string]string{ocmv1beta1.PlacementLabel: placement},
	}}
	if err := e.hub.Create(ctx, pd); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(e.hub.Get(ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		pd.Status.Decisions = []ocmv1beta1.ClusterDecision{}
		for _, c := range clusters {
			pd.Status.Decisions = append(pd.Status.Decisions, ocmv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
		}
		g.Expect(e.hub.Status().Update(ctx, pd)).To(Succeed())
	}).Should(Succeed())
}

// createNamespace creates a namespace, or keeps it when a run before this one (-count) made it.
func createNamespace(ctx context.Context, g Gomega, cl client.Client, name string) {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// expectApplied checks that the app's objects exist on the cluster, applied by the deployer.
func expectApplied(ctx context.Context, g Gomega, cl client.Client, namespace string) {
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}} {
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, obj)).To(Succeed())
		g.Expect(obj.GetDeletionTimestamp()).To(BeNil())
		managers := []string{}
		for _, f := range obj.GetManagedFields() {
			managers = append(managers, f.Manager)
		}
		g.Expect(managers).To(ContainElement(deployer.FieldOwner))
	}
}

// expectAbsent checks that neither of the app's objects exists on the cluster.
func expectAbsent(ctx context.Context, g Gomega, cl client.Client, namespace string) {
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}} {
		err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T db: %v", obj, err)
	}
}

// expectState checks the deployer's last result on a cluster.
func expectState(g Gomega, d *deployer.Deployer, cluster string, state deployer.State) deployer.ClusterResult {
	res, ok := d.Status().Clusters[cluster]
	g.Expect(ok).To(BeTrue(), "no result for %s yet", cluster)
	g.Expect(res.State).To(Equal(state), "cluster %s: %s", cluster, res.Message)
	return res
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

func TestDeployerMovesTheAppWhereTheDecisionSays(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	e := newEnv(g)
	ns := "deploy-move"
	createNamespace(ctx, g, e.hub, ns)
	setDecision(ctx, g, e, ns, lab.East)
	d := startDeployer(t, g, e, ns)

	// Decision east: the app runs on east, with writers, and nothing is on west.
	var eastPVCs map[string]types.UID
	g.Eventually(func(g Gomega) {
		expectApplied(ctx, g, e.east, ns)
		expectState(g, d, lab.East, deployer.StateApplied)
		expectState(g, d, lab.West, deployer.StateUntouched)
		eastPVCs = pvcUIDs(ctx, g, e.east, ns)
		pods := &corev1.PodList{}
		g.Expect(e.east.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, pod := range pods.Items {
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", pod.Name)
			g.Expect(pod.Labels).To(HaveKeyWithValue(storage.WriterLabel, "true"))
		}
	}).Should(Succeed(), "the demo app is applied on east and runs there")
	expectAbsent(ctx, g, e.west, ns)
	g.Expect(d.Status().DecisionFound).To(BeTrue())
	g.Expect(d.Status().Decided).To(Equal([]string{lab.East}))

	// Decision west: applied on west, removed from east, where the StatefulSet's PVCs stay.
	setDecision(ctx, g, e, ns, lab.West)
	g.Eventually(func(g Gomega) {
		expectApplied(ctx, g, e.west, ns)
		expectState(g, d, lab.West, deployer.StateApplied)
		expectAbsent(ctx, g, e.east, ns)
		expectState(g, d, lab.East, deployer.StateRemoved)
	}).Should(Succeed(), "the app moves from east to west")
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(e.east.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).Should(Succeed(), "the garbage collector removes the StatefulSet's pods on east")
	g.Expect(pvcUIDs(ctx, g, e.east, ns)).To(Equal(eastPVCs), "east keeps the same PVCs, as Kubernetes leaves them")

	// Decision east and west: applied on both; east's StatefulSet takes its old PVCs back.
	setDecision(ctx, g, e, ns, lab.East, lab.West)
	g.Eventually(func(g Gomega) {
		for _, c := range []string{lab.East, lab.West} {
			expectApplied(ctx, g, e.cluster(c), ns)
			expectState(g, d, c, deployer.StateApplied)
		}
	}).Should(Succeed(), "the app is applied on both clusters")
	g.Expect(pvcUIDs(ctx, g, e.east, ns)).To(Equal(eastPVCs))

	// Decision deleted: nothing is removed anywhere.
	g.Expect(e.hub.DeleteAllOf(ctx, &ocmv1beta1.PlacementDecision{}, client.InNamespace(ns))).To(Succeed())
	before := d.Status().Rounds
	g.Eventually(func(g Gomega) {
		st := d.Status()
		g.Expect(st.DecisionFound).To(BeFalse())
		g.Expect(st.Rounds).To(BeNumerically(">", before+2))
	}).Should(Succeed(), "the deployer sees that no decision exists, for several rounds")
	for _, c := range []string{lab.East, lab.West} {
		expectApplied(ctx, g, e.cluster(c), ns)
		expectState(g, d, c, deployer.StateApplied)
	}

	// A decision that names only a cluster the deployer does not know: removed from both
	// (relocation clears the decision this way), the unknown cluster reported, PVCs kept.
	setDecision(ctx, g, e, ns, "north")
	g.Eventually(func(g Gomega) {
		for _, c := range []string{lab.East, lab.West} {
			expectAbsent(ctx, g, e.cluster(c), ns)
			expectState(g, d, c, deployer.StateRemoved)
		}
		res := expectState(g, d, "north", deployer.StateError)
		g.Expect(res.Message).To(ContainSubstring("no client for"))
	}).Should(Succeed(), "the app is removed from both clusters")
	g.Expect(pvcUIDs(ctx, g, e.east, ns)).To(Equal(eastPVCs))
}

func TestDeployerSkipsAnUnreachableClusterAndAppliesOnceItIsBack(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	e := newEnv(g)
	ns := "deploy-down"
	createNamespace(ctx, g, e.hub, ns)
	setDecision(ctx, g, e, ns, lab.East, lab.West)

	west, err := testLab.Cluster(lab.West)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testLab.Stop(lab.West)).To(Succeed())
	westStarted := false
	t.Cleanup(func() {
		if !westStarted { // a failed step must not leave west down for the next test
			_ = testLab.Start(context.Background(), lab.West)
		}
	})
	d := startDeployer(t, g, e, ns)

	var westFailed deployer.ClusterResult
	g.Eventually(func(g Gomega) {
		expectApplied(ctx, g, e.east, ns)
		expectState(g, d, lab.East, deployer.StateApplied)
		westFailed = expectState(g, d, lab.West, deployer.StateError)
	}).Should(Succeed(), "east is applied while west is down")
	g.Expect(westFailed.Message).To(ContainSubstring(fmt.Sprintf("127.0.0.1:%d", west.Ports.APIServer)),
		"the error names west's API server")
	g.Eventually(func(g Gomega) {
		res := expectState(g, d, lab.East, deployer.StateApplied)
		g.Expect(res.Round).To(BeNumerically(">", westFailed.Round))
		res = expectState(g, d, lab.West, deployer.StateError)
		g.Expect(res.Round).To(BeNumerically(">", westFailed.Round), "west is retried")
	}).Should(Succeed(), "later rounds keep applying east and retrying west")

	g.Expect(testLab.Start(ctx, lab.West)).To(Succeed())
	westStarted = true
	g.Eventually(func(g Gomega) {
		expectApplied(ctx, g, e.west, ns)
		expectState(g, d, lab.West, deployer.StateApplied)
	}).Should(Succeed(), "the app is applied on west once west is back")
	expectApplied(ctx, g, e.east, ns)
}

func TestRunRefusesAnIncompleteDeployer(t *testing.T) {
	g := NewWithT(t)
	e := newEnv(g)
	manifests, err := deployer.LoadDir(appDir)
	g.Expect(err).NotTo(HaveOccurred())

	err = (&deployer.Deployer{Clusters: map[string]client.Client{lab.East: e.east}, Manifests: manifests}).Run(context.Background())
	g.Expect(err).To(MatchError(And(
		ContainSubstring("the Hub client is required"),
		ContainSubstring("the Namespace of the decisions is required"),
		ContainSubstring("the Placement name is required"),
	)))

	err = (&deployer.Deployer{Hub: e.east, Clusters: map[string]client.Client{lab.East: e.east}, Namespace: "ns", Placement: "p", Manifests: manifests}).Run(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("does not know PlacementDecision")), "a hub client without the OCM types")

	err = (&deployer.Deployer{Hub: e.hub, Clusters: map[string]client.Client{}, Namespace: "ns", Placement: "p"}).Run(context.Background())
	g.Expect(err).To(MatchError(And(ContainSubstring("at least one cluster client"), ContainSubstring("at least one manifest"))))
}
