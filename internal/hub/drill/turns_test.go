package drill

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

func indexedDrill(name string, created time.Time, phase v1alpha1.DrillPhase) *v1alpha1.DRDrill {
	return &v1alpha1.DRDrill{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.DRDrillSpec{DRPCName: "db"},
		Status:     v1alpha1.DRDrillStatus{Phase: phase},
	}
}

func TestTheTurnOfAnApplicationIsItsRunningDrillElseItsOldestOpenOne(t *testing.T) {
	g := NewWithT(t)
	x := newDrillIndex()
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	b := indexedDrill("b", t0, "")
	x.observe(b)
	a := indexedDrill("a", t0, "") // the same second: older by name
	x.observe(a)
	holder, known := x.turn(b)
	g.Expect(known).To(BeTrue())
	g.Expect(holder.key.Name).To(Equal("a"))

	// b is accepted (an index without a's later events): a running drill holds the turn.
	x.markRunning(b)
	holder, _ = x.turn(a)
	g.Expect(holder.key.Name).To(Equal("b"))
	g.Expect(holder.running).To(BeTrue())
	// A late event of b still Pending does not take its acceptance back.
	x.observe(indexedDrill("b", t0, v1alpha1.DrillPending))
	holder, _ = x.turn(a)
	g.Expect(holder.key.Name).To(Equal("b"))

	// b ends: the turn passes to a; b is history.
	x.observe(indexedDrill("b", t0, v1alpha1.DrillPassed))
	holder, _ = x.turn(a)
	g.Expect(holder.key.Name).To(Equal("a"))
	g.Expect(x.finished("app", "db")).To(HaveLen(1))
	g.Expect(x.openDrills("app", "db")).To(HaveLen(1))
	_, known = x.turn(b)
	g.Expect(known).To(BeFalse(), "a final drill is not open")

	// Another application's drills are another turn.
	other := indexedDrill("c", t0.Add(-time.Hour), "")
	other.Spec.DRPCName = "web"
	x.observe(other)
	holder, _ = x.turn(a)
	g.Expect(holder.key.Name).To(Equal("a"))

	x.forget(a)
	x.forget(b)
	g.Expect(x.openDrills("app", "db")).To(BeEmpty())
	g.Expect(x.finished("app", "db")).To(BeEmpty())
}

func TestAFloodOfDrillsIsJudgedInConstantTimeEach(t *testing.T) {
	g := NewWithT(t)
	x := newDrillIndex()
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	const n = 10000
	drills := make([]*v1alpha1.DRDrill, n)
	for i := range drills {
		drills[i] = indexedDrill(string(rune('a'+i%26))+time.Duration(i).String(), t0.Add(time.Duration(i)*time.Second), "")
		x.observe(drills[i])
	}
	// Every drill but the oldest is refused, one after the other, as the hub judges them.
	for _, d := range drills[1:] {
		holder, known := x.turn(d)
		g.Expect(known).To(BeTrue())
		g.Expect(holder.key.Name).To(Equal(drills[0].Name))
		d.Status.Phase = v1alpha1.DrillRefused
		x.observe(d)
	}
	g.Expect(x.openDrills("app", "db")).To(HaveLen(1))
}

// A drill waits while Protected is Unknown; a second drill of the application does not wait
// beside it: it is refused at once, naming the first.
func TestASecondDrillIsRefusedWhileTheFirstWaits(t *testing.T) {
	w := newWorld(t)
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) {
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProtected, Status: metav1.ConditionUnknown,
			Reason: v1alpha1.ReasonUnknown, Message: "east has not answered a probe yet"})
	})
	first := w.create("first", nil)
	w.reconcile(first)
	w.g.Expect(w.drill(first).Status.Phase).To(Equal(v1alpha1.DrillPending))
	w.tick(time.Second)
	second := w.create("second", nil)
	w.reconcile(second)
	d := w.drill(second)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRefused))
	c := accepted(d)
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonDrillWaiting))
	w.g.Expect(c.Message).To(ContainSubstring("drill first of db, created before this one, waits to start"))
}
