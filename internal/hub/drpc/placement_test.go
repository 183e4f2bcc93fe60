package drpc

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
)

// placementAnnotated creates the Placement app/app with the given annotations.
func (w *world) placementAnnotated(annotations map[string]string) {
	w.t.Helper()
	// The fake client sets no UID; the API server would.
	p := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "app", Annotations: annotations, UID: "placement-app"}}
	w.g.Expect(w.hub.Create(context.Background(), p)).To(Succeed())
}

func (w *world) placementAnnotations() map[string]string {
	w.t.Helper()
	p := &ocmv1beta1.Placement{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app"}, p)).To(Succeed())
	return p.Annotations
}

func validated(d *v1alpha1.DRPlacementControl) metav1.Condition {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionValidated); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestADRPlacementControlSteersItsOCMPlacement(t *testing.T) {
	t.Run("it disables the Placement's scheduling and names itself", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		w.placementAnnotated(map[string]string{"team": "shop"})
		w.reconcile()
		w.g.Expect(w.placementAnnotations()).To(Equal(map[string]string{
			"team": "shop", ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "app/app",
		}))
		w.g.Expect(validated(w.drpc()).Status).To(Equal(metav1.ConditionTrue))
	})
	t.Run("a Placement steered by another DRPlacementControl refuses it, saying what to do", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		other := placementDRPC()
		other.Namespace = "other"
		other.Spec.PlacementRef.Namespace = "app"
		w.g.Expect(w.hub.Create(context.Background(), other)).To(Succeed())
		claim := map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "other/app"}
		w.placementAnnotated(claim)
		w.reconcile()
		v := validated(w.drpc())
		w.g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonPlacementSteered))
		w.g.Expect(v.Message).To(ContainSubstring("already steered by DRPlacementControl other/app"))
		w.g.Expect(v.Message).To(ContainSubstring("name another Placement in spec.placementRef"))
		w.g.Expect(w.placementAnnotations()).To(Equal(claim))
		err := w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app-decision-1"}, &ocmv1beta1.PlacementDecision{})
		w.g.Expect(err).To(HaveOccurred(), "a refused DRPlacementControl writes no decision")
	})
	t.Run("a claim whose DRPlacementControl is gone is taken over", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		w.placementAnnotated(map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "gone/app"})
		w.reconcile()
		w.g.Expect(w.placementAnnotations()).To(HaveKeyWithValue(AnnotationSteeredBy, "app/app"))
		w.g.Expect(validated(w.drpc()).Status).To(Equal(metav1.ConditionTrue))
	})
	t.Run("without a Placement the DRPlacementControl goes on alone", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		w.reconcile()
		w.g.Expect(validated(w.drpc()).Status).To(Equal(metav1.ConditionTrue))
	})
}

func TestUnprotectLeavesTheApplicationWhereItsDataIs(t *testing.T) {
	t.Run("a Placement it placed keeps scheduling disabled and its decision, and says why", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		w.placementAnnotated(map[string]string{"team": "shop"})
		w.deployed()
		w.g.Expect(w.decision()).To(Equal([]string{"east"}))
		w.g.Expect(w.r.releasePlacement(context.Background(), w.drpc())).To(Succeed())
		got := w.placementAnnotations()
		w.g.Expect(got).To(HaveKeyWithValue("team", "shop"))
		w.g.Expect(got).To(HaveKeyWithValue(ocmv1beta1.PlacementDisableAnnotation, "true"), "OCM's scheduler would move the application")
		w.g.Expect(got).NotTo(HaveKey(AnnotationSteeredBy), "drover no longer steers it")
		w.g.Expect(got[AnnotationSchedulingLeftDisabled]).To(And(ContainSubstring("DRPlacementControl app/app was deleted"),
			ContainSubstring("names east, where the application and its data are"), ContainSubstring("Balance and Steady"),
			ContainSubstring("then remove the annotations "+ocmv1beta1.PlacementDisableAnnotation)))
		w.g.Expect(w.decision()).To(Equal([]string{"east"}), "the decision keeps the application where its data is")

		// A DRPlacementControl steering it again removes the note.
		w.reconcile()
		w.g.Expect(w.placementAnnotations()).To(Equal(map[string]string{"team": "shop",
			ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "app/app"}))
	})
	t.Run("a Placement it never placed goes back to OCM", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		w.placementAnnotated(map[string]string{"team": "shop", ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "app/app"})
		w.g.Expect(w.r.releasePlacement(context.Background(), w.drpc())).To(Succeed())
		w.g.Expect(w.placementAnnotations()).To(Equal(map[string]string{"team": "shop"}))
	})
	t.Run("a Placement another DRPlacementControl steers is left alone", func(t *testing.T) {
		w := newWorld(t, placementDRPC())
		claim := map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true", AnnotationSteeredBy: "other/app"}
		w.placementAnnotated(claim)
		w.g.Expect(w.r.releasePlacement(context.Background(), w.drpc())).To(Succeed())
		w.g.Expect(w.placementAnnotations()).To(Equal(claim))
	})
}

// OCM's placement controller labels every decision with its placement, its decision group's
// name and index, and owns it by its Placement as controller
// (open-cluster-management-io/ocm pkg/placement/controllers/scheduling/scheduling_controller.go,
// generateDecision); OCM's decision tracker (sdk-go pkg/apis/cluster/v1beta1/placement.go,
// parseGroupKeyFromDecision) reads the group index of every decision of a placement with
// strconv.Atoi and fails with "incorrect group index" without it.
func TestTheDecisionIsLabelledAndOwnedAsOCMsOwn(t *testing.T) {
	w := newWorld(t, placementDRPC())
	w.placementAnnotated(nil)
	p := &ocmv1beta1.Placement{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app"}, p)).To(Succeed())
	w.deployed()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}))

	pd := &ocmv1beta1.PlacementDecision{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app-decision-1"}, pd)).To(Succeed())
	w.g.Expect(pd.Labels).To(HaveKeyWithValue(ocmv1beta1.PlacementLabel, "app"))
	w.g.Expect(pd.Labels).To(HaveKeyWithValue(ocmv1beta1.DecisionGroupNameLabel, ""))
	index, err := strconv.Atoi(pd.Labels[ocmv1beta1.DecisionGroupIndexLabel])
	w.g.Expect(err).NotTo(HaveOccurred(), "OCM's decision tracker parses the group index")
	w.g.Expect(index).To(Equal(0))
	w.g.Expect(pd.OwnerReferences).To(ConsistOf(And(
		HaveField("APIVersion", ocmv1beta1.GroupVersion.String()), HaveField("Kind", "Placement"),
		HaveField("Name", "app"), HaveField("UID", p.UID), HaveField("Controller", ptr.To(true)))))

	t.Run("a decision written without them gets them at the next pass", func(t *testing.T) {
		g := NewWithT(t)
		pd := &ocmv1beta1.PlacementDecision{}
		g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app-decision-1"}, pd)).To(Succeed())
		pd.Labels = map[string]string{ocmv1beta1.PlacementLabel: "app", LabelDecisionOwner: "app", "team": "shop"}
		pd.OwnerReferences = nil
		g.Expect(w.hub.Update(context.Background(), pd)).To(Succeed())
		w.r.decisions.Forget(client.ObjectKeyFromObject(pd))
		w.reconcile()
		g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "app-decision-1"}, pd)).To(Succeed())
		g.Expect(pd.Labels).To(Equal(map[string]string{ocmv1beta1.PlacementLabel: "app", LabelDecisionOwner: "app", "team": "shop",
			ocmv1beta1.DecisionGroupNameLabel: "", ocmv1beta1.DecisionGroupIndexLabel: "0"}))
		g.Expect(pd.OwnerReferences).To(ConsistOf(HaveField("UID", p.UID)))
	})
}
