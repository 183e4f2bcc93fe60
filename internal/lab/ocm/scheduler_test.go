package ocm_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab/ocm"
)

// The scheduler is driven pass by pass (Scheduler.Pass), so every check follows a known number
// of passes and none waits on time.

var clusters = []string{"west", "east"}

// setup creates a namespace and in it the Placement app selecting one cluster, with the given
// annotations.
func setup(t *testing.T, ns string, annotations map[string]string) *ocmv1beta1.Placement {
	t.Helper()
	ctx := t.Context()
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	p := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Annotations: annotations},
		Spec: ocmv1beta1.PlacementSpec{NumberOfClusters: ptr.To(int32(1))}}
	if err := hub.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// otherWriter writes a decision as another controller would (drover before it disabled the
// scheduling): clusters in its status, its own label beside the placement's.
func otherWriter(t *testing.T, ns, name string, clusters ...string) {
	t.Helper()
	ctx := t.Context()
	pd := &ocmv1beta1.PlacementDecision{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pd)
	if apierrors.IsNotFound(err) {
		pd = &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		err = hub.Create(ctx, pd)
	}
	if err != nil {
		t.Fatal(err)
	}
	pd.Labels = map[string]string{ocmv1beta1.PlacementLabel: "app", "drover.io/drpc": "app"}
	if err := hub.Update(ctx, pd); err != nil {
		t.Fatal(err)
	}
	pd.Status.Decisions = []ocmv1beta1.ClusterDecision{}
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, ocmv1beta1.ClusterDecision{ClusterName: c, Reason: "other writer"})
	}
	if err := hub.Status().Update(ctx, pd); err != nil {
		t.Fatal(err)
	}
}

func pass(t *testing.T, s *ocm.Scheduler, n int) {
	t.Helper()
	for range n {
		if err := s.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// decisions returns the placement's decisions by name: the clusters each names.
func decisions(t *testing.T, ns string) map[string][]string {
	t.Helper()
	list := &ocmv1beta1.PlacementDecisionList{}
	if err := hub.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{ocmv1beta1.PlacementLabel: "app"}); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range list.Items {
		out[d.Name] = []string{}
		for _, c := range d.Status.Decisions {
			out[d.Name] = append(out[d.Name], c.ClusterName)
		}
	}
	return out
}

func expectDecisions(t *testing.T, ns, what string, want map[string][]string) {
	t.Helper()
	if got := decisions(t, ns); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("%s: decisions = %v, want %v", what, got, want)
	}
}

func TestTheSchedulerWritesThePlacementsDecisionAndOverwritesAnyOtherWriter(t *testing.T) {
	ns := "scheduled"
	p := setup(t, ns, nil)
	s := &ocm.Scheduler{Hub: hub, Clusters: clusters}

	pass(t, s, 1)
	expectDecisions(t, ns, "a new placement", map[string][]string{"app-decision-1": {"east"}})
	pd := &ocmv1beta1.PlacementDecision{}
	if err := hub.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-decision-1"}, pd); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(pd); owner == nil || owner.Kind != "Placement" || owner.UID != p.UID {
		t.Fatalf("the decision's controller is %+v, want the Placement %s", owner, p.UID)
	}
	if err := hub.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	if p.Status.NumberOfSelectedClusters != 1 {
		t.Fatalf("status.numberOfSelectedClusters = %d, want 1", p.Status.NumberOfSelectedClusters)
	}

	// Another controller names both clusters in decision-1 and writes a decision of its own.
	otherWriter(t, ns, "app-decision-1", "west", "east")
	otherWriter(t, ns, "app-other", "west")
	pass(t, s, 1)
	expectDecisions(t, ns, "after another writer named both clusters", map[string][]string{"app-decision-1": {"east"}})
	pass(t, s, 1)
	if err := hub.Get(t.Context(), client.ObjectKeyFromObject(pd), pd); err != nil {
		t.Fatal(err)
	}
	if _, ok := pd.Labels["drover.io/drpc"]; ok || pd.Labels[ocmv1beta1.PlacementLabel] != "app" {
		t.Fatalf("the decision's labels are %v, want the placement controller's only", pd.Labels)
	}

	// A cluster decided alone is kept (the Steady prioritizer); an empty decision is filled.
	otherWriter(t, ns, "app-decision-1", "west")
	pass(t, s, 2)
	expectDecisions(t, ns, "after another writer named west alone", map[string][]string{"app-decision-1": {"west"}})
	otherWriter(t, ns, "app-decision-1")
	pass(t, s, 1)
	expectDecisions(t, ns, "after another writer named no cluster", map[string][]string{"app-decision-1": {"east"}})
}

func TestTheSchedulerLeavesAPlacementWithSchedulingDisabledAlone(t *testing.T) {
	ns := "disabled"
	setup(t, ns, map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true"})
	s := &ocm.Scheduler{Hub: hub, Clusters: clusters}
	otherWriter(t, ns, "app-decision-1", "west", "east")
	otherWriter(t, ns, "app-other", "west")
	before := &ocmv1beta1.PlacementDecisionList{}
	if err := hub.List(t.Context(), before, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}

	pass(t, s, 3)
	expectDecisions(t, ns, "three passes later", map[string][]string{"app-decision-1": {"west", "east"}, "app-other": {"west"}})
	after := &ocmv1beta1.PlacementDecisionList{}
	if err := hub.List(t.Context(), after, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range before.Items {
		if b, a := before.Items[i], after.Items[i]; b.Name != a.Name || b.ResourceVersion != a.ResourceVersion {
			t.Fatalf("decision %s was written (resourceVersion %s → %s)", b.Name, b.ResourceVersion, a.ResourceVersion)
		}
	}
}

// OCM's default prioritizers, Balance and Steady at weight 1 each, do not keep a placement
// where it is: Balance scores the cluster most other placements use −100, which cancels
// Steady's +100 for the cluster the placement's decision names. A placement whose scheduling
// is given back (the disable annotation removed) while its decision names the busiest cluster
// moves to an unused one at the next pass.
func TestAPlacementHandedBackOnTheBusiestClusterMovesAway(t *testing.T) {
	ns := "handed-back"
	p := setup(t, ns, map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true"})
	otherWriter(t, ns, "app-decision-1", "east")
	// Other applications' placements run on east: more than twice as many as on west, counting
	// what the package's other tests left on the hub.
	others := "handed-back-others"
	if err := hub.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: others}}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: others, Name: fmt.Sprintf("shop-%d-decision-1", i),
			Labels: map[string]string{ocmv1beta1.PlacementLabel: fmt.Sprintf("shop-%d", i)}}}
		if err := hub.Create(t.Context(), pd); err != nil {
			t.Fatal(err)
		}
		pd.Status.Decisions = []ocmv1beta1.ClusterDecision{{ClusterName: "east", Reason: "another application"}}
		if err := hub.Status().Update(t.Context(), pd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hub.Delete(context.Background(), pd) })
	}
	s := &ocm.Scheduler{Hub: hub, Clusters: clusters}
	pass(t, s, 2)
	expectDecisions(t, ns, "while scheduling is disabled", map[string][]string{"app-decision-1": {"east"}})

	before := p.DeepCopy()
	delete(p.Annotations, ocmv1beta1.PlacementDisableAnnotation)
	if err := hub.Patch(t.Context(), p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	pass(t, s, 1)
	expectDecisions(t, ns, "handed back to the scheduler", map[string][]string{"app-decision-1": {"west"}})
}
