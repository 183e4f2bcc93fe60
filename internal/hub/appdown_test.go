package hub_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/lab"
)

// A relocation whose application cannot start where it moved: west's namespace has a
// ResourceQuota of no pods, so the API server refuses the StatefulSet's pods there. Every step
// of drover succeeds, and the application is down: the DRPlacementControl must say so
// (Available False, reason PodsRefused, quoting the refusal; progression WaitingForApplication)
// instead of calling the relocation complete, until the quota goes and the pods run.
func TestARelocationWhoseApplicationCannotStartSaysWhyUntilItRuns(t *testing.T) {
	a := newApp(t, "hub-appdown")
	ctx := context.Background()
	east, west := a.clusters[lab.East], a.clusters[lab.West]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	a.writing(lab.East, a.volumes(lab.East))

	// The namespace exists on west: its secondary group lives there.
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	a.g.Expect(west.Create(ctx, quota)).To(Succeed())

	a.ask(v1alpha1.ActionRelocate, lab.West)
	a.g.Eventually(func(g Gomega) {
		d := a.drpc(g)
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRelocated), "progression %s", d.Status.Progression)
		g.Expect(d.Status.Progression).To(Equal(string(drpc.ProgressionWaitingForApp)))
		av := cond(d, v1alpha1.ConditionAvailable)
		g.Expect(av.Status).To(Equal(metav1.ConditionFalse), av.Message)
		g.Expect(av.Reason).To(Equal(v1alpha1.ReasonPodsRefused), av.Message)
		g.Expect(av.Message).To(ContainSubstring("exceeded quota"))
		t.Logf("relocated, the application down: %s/%s; Available %s (%s): %s", d.Status.Phase, d.Status.Progression, av.Status, av.Reason, av.Message)
	}).Should(Succeed(), "the DRPlacementControl says the application does not run on west, and why")

	a.g.Expect(west.Delete(ctx, quota)).To(Succeed())
	d := a.settledOn(v1alpha1.PhaseRelocated, lab.West, false, "the pods run on west once the quota is gone")
	a.g.Expect(d.Status.Progression).NotTo(Equal(string(drpc.ProgressionWaitingForApp)))
	a.writing(lab.West, a.volumes(lab.West))
}
