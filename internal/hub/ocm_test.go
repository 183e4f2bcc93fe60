package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/deployer"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/lab/ocm"
	"github.com/drover-io/drover/internal/tenancy"
)

// The application of a real OCM hub: an OCM Placement selecting one cluster, its decisions
// written by the placement controller (the lab's, internal/lab/ocm) until drover takes them
// over, and a GitOps tool (the lab's deployer) following them. Across protect, a failover with
// east lost, east's return and a relocation back to east, the application lands where drover
// decides, every time: after each action the decision names drover's clusters and still does
// after more passes of the scheduler, which writes no decision of the application while drover
// steers it. A second DRPlacementControl naming the same Placement is refused; unprotect
// leaves the application where it runs (TestUnprotectOnAnOCMHubLeavesTheApplicationWhereItsDataIs).
func TestPlacementModeOnAnOCMHubLandsTheApplicationWhereDroverDecides(t *testing.T) {
	a := newApp(t, "hub-ocm")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// OCM's Balance prioritizer sends a new placement to the cluster other placements use
	// least: make that east.
	a.busier(ctx, lab.West, 1)
	placement := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "db"},
		Spec: ocmv1beta1.PlacementSpec{NumberOfClusters: ptr.To(int32(1))}}
	a.g.Expect(a.hub.Create(ctx, placement)).To(Succeed())
	rec := &recordingClient{Client: a.hub, ns: a.ns}
	s := &ocm.Scheduler{Hub: rec, Clusters: []string{lab.East, lab.West}, Interval: 200 * time.Millisecond}
	d := a.gitOps(ctx)
	background(t, cancel, s.Run, d.Run)

	// OCM places the application before it is protected; drover takes the decision over.
	a.g.Eventually(func(g Gomega) { g.Expect(d.Status().Decided).To(Equal([]string{lab.East})) }).Should(Succeed())
	handles := a.volumes(lab.East)
	a.writing(lab.East, handles)
	rec.arm()
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(true))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	a.landsWhereDroverDecides(s, d, rec, "protect", lab.East)
	a.expectSteeredBy(a.key.String())
	a.refusesASecondDRPC(ctx)

	// Failover with east lost: drover names west and keeps east until east acknowledges.
	a.lose(lab.East, handles)
	a.ask(v1alpha1.ActionFailover, lab.West)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the application fails over to west")
	a.landsWhereDroverDecides(s, d, rec, "failover with east lost", lab.West, lab.East)
	a.writing(lab.West, handles)

	// East returns and is demoted; drover removes it from the decision.
	a.restore(lab.East)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east's group is Secondary with no human step")
	a.gone(lab.East)
	a.landsWhereDroverDecides(s, d, rec, "east back", lab.West)

	// Relocate back to east: the decision is empty for the final sync, then names east.
	a.ask(v1alpha1.ActionRelocate, lab.East)
	a.settledOn(v1alpha1.PhaseRelocated, lab.East, false, "the application relocates to east")
	a.landsWhereDroverDecides(s, d, rec, "relocate", lab.East)
	a.expectNothingLost(lab.West, lab.East, handles)
	a.writing(lab.East, handles)

	// Unprotect: the application stays where it runs.
	a.unprotectKeepsThePlacement(ctx, s, d, lab.East)
	a.writing(lab.East, handles)
}

// OCM's default prioritizers are Balance and Steady at weight 1 each
// (open-cluster-management-io/ocm pkg/placement/controllers/scheduling/schedule.go): on the
// cluster other placements use most, Balance's −100 cancels Steady's +100, and a Placement
// handed back to the scheduler moves to a less used cluster, where the GitOps tool starts the
// application over new, empty PVCs. Here the application runs on east, protected, while other
// applications' placements make east more than twice as busy as west; unprotect leaves the
// Placement's scheduling disabled, and after more scheduler passes the decision still names
// east, the application still runs there and its writer still writes.
func TestUnprotectOnAnOCMHubLeavesTheApplicationWhereItsDataIs(t *testing.T) {
	a := newApp(t, "hub-ocm-unprotect")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.busier(ctx, lab.West, 1)
	placement := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "db"},
		Spec: ocmv1beta1.PlacementSpec{NumberOfClusters: ptr.To(int32(1))}}
	a.g.Expect(a.hub.Create(ctx, placement)).To(Succeed())
	s := &ocm.Scheduler{Hub: a.hub, Clusters: []string{lab.East, lab.West}, Interval: 200 * time.Millisecond}
	d := a.gitOps(ctx)
	background(t, cancel, s.Run, d.Run)
	a.g.Eventually(func(g Gomega) { g.Expect(d.Status().Decided).To(Equal([]string{lab.East})) }).Should(Succeed())
	handles := a.volumes(lab.East)
	a.writing(lab.East, handles)
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(true))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")

	a.busier(ctx, lab.East, 2)
	a.unprotectKeepsThePlacement(ctx, s, d, lab.East)
	a.writing(lab.East, handles)
}

// unprotectKeepsThePlacement deletes the DRPlacementControl and checks that the application
// stays on cluster: the Placement's scheduling stays disabled with drover's note, the decision
// is labelled as OCM's and still names cluster after more scheduler passes, and the GitOps tool
// still deploys it there.
func (a *app) unprotectKeepsThePlacement(ctx context.Context, s *ocm.Scheduler, d *deployer.Deployer, cluster string) {
	a.t.Helper()
	a.g.Expect(a.hub.Delete(ctx, a.drpcFor(true))).To(Succeed())
	a.g.Eventually(func(g Gomega) {
		g.Expect(a.hub.Get(ctx, a.key, &v1alpha1.DRPlacementControl{})).NotTo(Succeed())
	}).Should(Succeed(), "the DRPlacementControl is unprotected")
	for range 3 {
		a.g.Expect(s.Pass(ctx)).To(Succeed())
	}
	a.g.Expect(decidedBy(a.g, a.hub, a.ns)).To(Equal([]string{cluster}), "the decision keeps the application where its data is")
	p := &ocmv1beta1.Placement{}
	a.g.Expect(a.hub.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "db"}, p)).To(Succeed())
	a.g.Expect(p.Annotations).To(HaveKeyWithValue(ocmv1beta1.PlacementDisableAnnotation, "true"))
	a.g.Expect(p.Annotations).NotTo(HaveKey(drpc.AnnotationSteeredBy))
	a.g.Expect(p.Annotations[drpc.AnnotationSchedulingLeftDisabled]).To(ContainSubstring("names " + cluster + ", where the application and its data are"))
	pd := &ocmv1beta1.PlacementDecision{}
	a.g.Expect(a.hub.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "db-decision-1"}, pd)).To(Succeed())
	a.g.Expect(pd.Labels).To(HaveKeyWithValue(ocmv1beta1.DecisionGroupIndexLabel, "0"))
	a.g.Expect(metav1.GetControllerOf(pd)).To(HaveField("UID", p.UID), "the decision is owned by its Placement, as OCM's are")
	a.g.Consistently(func(g Gomega) { g.Expect(d.Status().Decided).To(Equal([]string{cluster})) }).WithTimeout(2*time.Second).Should(Succeed(),
		"the GitOps tool keeps the application on %s", cluster)
}

// busier makes cluster more than factor times as busy as the other lab cluster in OCM's Balance
// prioritizer, which counts every PlacementDecision on the hub but the placement's own: it adds
// decisions of other placements naming cluster, in a namespace of their own that the test's
// end removes.
func (a *app) busier(ctx context.Context, cluster string, factor int) {
	a.t.Helper()
	count := map[string]int{}
	list := &ocmv1beta1.PlacementDecisionList{}
	a.g.Expect(a.hub.List(ctx, list)).To(Succeed())
	for _, pd := range list.Items {
		if pd.Namespace == a.ns && pd.Labels[ocmv1beta1.PlacementLabel] == "db" {
			continue
		}
		for _, c := range pd.Status.Decisions {
			count[c.ClusterName]++
		}
	}
	other := lab.East
	if cluster == lab.East {
		other = lab.West
	}
	ns := fmt.Sprintf("%s-load-%s", a.ns, cluster)
	a.g.Expect(a.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	a.t.Cleanup(func() {
		_ = a.hub.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	for i := 0; count[cluster] <= factor*count[other]; i++ {
		pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("load-%d-decision-1", i),
			Labels: map[string]string{ocmv1beta1.PlacementLabel: fmt.Sprintf("load-%d", i)}}}
		a.g.Expect(a.hub.Create(ctx, pd)).To(Succeed())
		pd.Status.Decisions = []ocmv1beta1.ClusterDecision{{ClusterName: cluster, Reason: "another application"}}
		a.g.Expect(a.hub.Status().Update(ctx, pd)).To(Succeed())
		count[cluster]++
	}
}

// gitOps returns the lab's deployer of the test application, following placement db.
func (a *app) gitOps(ctx context.Context) *deployer.Deployer {
	root, err := labtest.RepoRoot()
	a.g.Expect(err).NotTo(HaveOccurred())
	manifests, err := deployer.LoadDir(filepath.Join(root, "internal", "lab", "deployer", "testdata", "app"))
	a.g.Expect(err).NotTo(HaveOccurred())
	clusters := map[string]client.Client{}
	for name, cl := range a.clusters {
		clusters[name] = cl
	}
	return &deployer.Deployer{Hub: a.hub, Clusters: clusters, Namespace: a.ns, Placement: "db", Manifests: manifests, Interval: 500 * time.Millisecond}
}

// background runs each function until the test ends, reporting their errors.
func background(t *testing.T, cancel context.CancelFunc, runs ...func(context.Context) error) {
	ctx, stopAll := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				t.Errorf("a background loop failed: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		stopAll()
		wg.Wait()
	})
}

// landsWhereDroverDecides checks, after more passes of the scheduler, that the decision names
// exactly the clusters drover chose, that the GitOps tool follows it, and that the scheduler
// wrote no decision of the application since drover took over.
func (a *app) landsWhereDroverDecides(s *ocm.Scheduler, d *deployer.Deployer, rec *recordingClient, after string, want ...string) {
	a.t.Helper()
	for range 3 {
		a.g.Expect(s.Pass(context.Background())).To(Succeed())
	}
	slices.Sort(want)
	a.g.Expect(decidedBy(a.g, a.hub, a.ns)).To(Equal(want), "%s: the decision names drover's clusters after three more scheduler passes", after)
	a.g.Eventually(func(g Gomega) {
		got := slices.Clone(d.Status().Decided)
		slices.Sort(got)
		g.Expect(got).To(Equal(want))
	}).Should(Succeed(), "%s: the GitOps tool follows drover's decision", after)
	a.g.Expect(rec.written()).To(BeEmpty(), "%s: the scheduler wrote the application's decisions while drover steers them", after)
}

// decidedBy returns the clusters every decision of placement db names, sorted.
func decidedBy(g Gomega, hub client.Client, ns string) []string {
	list := &ocmv1beta1.PlacementDecisionList{}
	g.Expect(hub.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{ocmv1beta1.PlacementLabel: "db"})).To(Succeed())
	out := []string{}
	for _, pd := range list.Items {
		for _, c := range pd.Status.Decisions {
			out = append(out, c.ClusterName)
		}
	}
	slices.Sort(out)
	return out
}

// expectSteeredBy checks the Placement's annotations: scheduling disabled and steered by the
// DRPlacementControl named, or neither when by is empty.
func (a *app) expectSteeredBy(by string) {
	a.t.Helper()
	a.g.Eventually(func(g Gomega) {
		p := &ocmv1beta1.Placement{}
		g.Expect(a.hub.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: "db"}, p)).To(Succeed())
		if by == "" {
			g.Expect(p.Annotations).NotTo(HaveKey(ocmv1beta1.PlacementDisableAnnotation))
			g.Expect(p.Annotations).NotTo(HaveKey(drpc.AnnotationSteeredBy))
			return
		}
		g.Expect(p.Annotations).To(HaveKeyWithValue(ocmv1beta1.PlacementDisableAnnotation, "true"))
		g.Expect(p.Annotations).To(HaveKeyWithValue(drpc.AnnotationSteeredBy, by))
	}).Should(Succeed(), "the Placement's annotations")
}

// refusesASecondDRPC creates a DRPlacementControl in another namespace naming the same
// Placement (its namespace allowed to name the Placements of the first's, as a GitOps tool's
// namespace is): it is refused, saying which DRPlacementControl steers it, writes nothing, and
// its deletion leaves the first one's claim.
func (a *app) refusesASecondDRPC(ctx context.Context) {
	a.t.Helper()
	ns := a.ns + "-second"
	a.g.Expect(a.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{tenancy.LabelPlacementNamespace: a.ns}}})).To(Succeed())
	second := a.drpcFor(true)
	second.Namespace = ns
	second.Spec.PlacementRef.Namespace = a.ns
	a.g.Expect(a.hub.Create(ctx, second)).To(Succeed())
	a.g.Eventually(func(g Gomega) {
		got := &v1alpha1.DRPlacementControl{}
		g.Expect(a.hub.Get(ctx, client.ObjectKeyFromObject(second), got)).To(Succeed())
		v := cond(got, v1alpha1.ConditionValidated)
		g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(v.Reason).To(Equal(v1alpha1.ReasonPlacementSteered))
		g.Expect(v.Message).To(ContainSubstring(a.key.String()))
	}).Should(Succeed(), "a second DRPlacementControl naming the Placement is refused")
	a.g.Expect(a.hub.Delete(ctx, second)).To(Succeed())
	a.g.Eventually(func(g Gomega) {
		g.Expect(a.hub.Get(ctx, client.ObjectKeyFromObject(second), &v1alpha1.DRPlacementControl{})).NotTo(Succeed())
	}).Should(Succeed(), "the refused DRPlacementControl is deleted")
	a.expectSteeredBy(a.key.String())
	a.g.Expect(decidedBy(a.g, a.hub, a.ns)).To(Equal([]string{lab.East}))
}

// recordingClient is the scheduler's client of the hub; once armed, it records every write to
// a PlacementDecision of the namespace made by a scheduler pass that began after drover took
// the Placement over. The scheduler reads the Placements once at the start of a pass and makes
// one pass at a time, as OCM's controller acts on the Placement its cache held when it began:
// a pass in flight when drover sets the disable annotation may still write once, and drover
// takes its decision back. So arming waits for the first list of Placements that shows db
// disabled; every write after it comes from a pass that knew drover steers.
type recordingClient struct {
	client.Client
	ns string
	mu sync.Mutex
	// pending is set by arm; armed once a pass lists db disabled.
	pending, armed bool
	writes         []string
}

func (c *recordingClient) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = true
}

func (c *recordingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	placements, ok := list.(*ocmv1beta1.PlacementList)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range placements.Items {
		if c.pending && p.Namespace == c.ns && p.Name == "db" && p.Annotations[ocmv1beta1.PlacementDisableAnnotation] == "true" {
			c.armed = true
		}
	}
	return nil
}

func (c *recordingClient) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

func (c *recordingClient) record(verb string, obj client.Object) {
	pd, ok := obj.(*ocmv1beta1.PlacementDecision)
	if !ok || pd.Namespace != c.ns {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed {
		c.writes = append(c.writes, fmt.Sprintf("%s %s %v at %s", verb, pd.Name, pd.Status.Decisions, time.Now().Format(time.TimeOnly)))
	}
}

func (c *recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.record("create", obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.record("patch labels of", obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.record("delete", obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *recordingClient) Status() client.SubResourceWriter {
	return recordingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type recordingStatus struct {
	client.SubResourceWriter
	c *recordingClient
}

func (s recordingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.c.record("patch status of", obj)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
