package hub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
)

// A drill of a protected application runs on the peer through the hub's credential there, is
// recorded and torn down, with the agents played by fakeDrillAgent. Then a failover asked for
// while a drill runs aborts the drill and is not held back by it: the test logs the failover's
// time with and without a drill running.
func TestADrillRunsOnThePeerAndAFailoverOvertakesIt(t *testing.T) {
	a := protectedOnEast(t, "hub-drill")

	refused := a.drill("to-the-primary", lab.East)
	a.g.Eventually(func(g Gomega) {
		g.Expect(a.getDrill(g, refused).Status.Phase).To(Equal(v1alpha1.DrillRefused))
	}).Should(Succeed(), "a drill on the primary is refused")
	c := drillAccepted(a.getDrill(a.g, refused))
	a.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonBadTarget), c.Message)

	d := a.finishedDrill(a.drill("first", ""), v1alpha1.DrillPassed)
	a.g.Expect(d.Status.TargetCluster).To(Equal(lab.West))
	a.g.Expect(d.Status.PrimaryCluster).To(Equal(lab.East))
	// The application's volumes are mirrored (lab-block, VolumeReplication): no copy of a
	// secondary image can be made, so the agent checks readiness and starts nothing.
	a.g.Expect(d.Status.Mode).To(Equal(v1alpha1.DrillModeReadiness))
	a.g.Expect(d.Status.Readiness).NotTo(BeEmpty(), "a readiness drill lists what it checked")
	a.g.Expect(d.Status.RTOSeconds).To(BeNil(), "a readiness drill started nothing, so it has no RTO")
	a.g.Expect(d.Status.Teardown.Result).To(Equal(v1alpha1.DrillResultPassed))
	a.g.Expect(d.Status.PrimaryReplication).NotTo(BeNil())
	a.g.Expect(d.Status.Steps[0].Name).To(Equal("Accepted"))
	a.g.Expect(d.Status.Steps[len(d.Status.Steps)-1].Name).To(Equal("TearingDown"))
	a.g.Expect(len(d.Status.Steps)).To(BeNumerically(">", 2), "the agent's steps are copied between")
	for _, s := range d.Status.Steps {
		a.g.Expect(s.Finished).NotTo(BeNil(), "step %s has its duration", s.Name)
	}
	t.Logf("drill on %s: %s mode, %d readiness checks, primary replication %s (%s), %s from start to end",
		d.Status.TargetCluster, d.Status.Mode, len(d.Status.Readiness), d.Status.PrimaryReplication.Result,
		d.Status.PrimaryReplication.Message, d.Status.EndTime.Sub(d.Status.StartTime.Time))
	a.expectEvents(v1alpha1.EventDrillStarted, v1alpha1.EventDrillPassed)
	a.expectDrillEvents(d.Name, v1alpha1.EventDrillStarted, v1alpha1.EventDrillPassed)

	asked := a.ask(v1alpha1.ActionFailover, lab.West)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the application fails over to west")
	without := time.Since(asked)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east is the peer again")

	// A drill kept for 10 minutes runs until the failover overtakes it.
	running := a.drill("overtaken", "")
	a.g.Eventually(func(g Gomega) {
		d := a.getDrill(g, running)
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRunning))
		g.Expect(d.Status.Result).To(Equal(v1alpha1.DrillResultPassed))
		g.Expect(d.Status.TargetCluster).To(Equal(lab.East))
	}).Should(Succeed(), "a drill runs on east and is kept")
	asked = a.ask(v1alpha1.ActionFailover, lab.East)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.East, false, "the application fails over to east while the drill runs there")
	with := time.Since(asked)
	d = a.finishedDrill(running, v1alpha1.DrillAborted)
	c = drillAccepted(d)
	a.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonActionOvertook), c.Message)
	a.expectDrillEvents(d.Name, v1alpha1.EventDrillAborted)
	t.Logf("failover time (ask to FailedOver and Available): %s without a drill (east to west), %s with a drill running on the target (west to east)",
		without.Round(time.Millisecond), with.Round(time.Millisecond))
}

// protectedOnEast deploys the application on east and protects it.
func protectedOnEast(t *testing.T, ns string) *app {
	a := newApp(t, ns)
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	a.pvcsProtectedOn(lab.East)
	return a
}

// The hub killed right before or after one of its writes during a drill (some of them the
// drill's, some the DRPlacementControl's) and started again, as the suite's crash injector does,
// ends the drill Passed and torn down.
func TestAHubKilledDuringADrillEndsIt(t *testing.T) {
	a := protectedOnEast(t, "hub-drill-crash")
	for i, p := range []crash.Point{{Write: 1, When: crash.Before}, {Write: 2, When: crash.After}, {Write: 4, When: crash.Before}} {
		// The hub refuses a drill of an application that is not Protected (a late sync after
		// the previous kill, on a loaded machine): each drill is asked once it is.
		a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, fmt.Sprintf("the application is Protected before drill crash-%d", i))
		armCrash("hub", p)
		d := a.finishedDrill(a.drill(fmt.Sprintf("crash-%d", i), ""), v1alpha1.DrillPassed)
		killed := disarmCrash()
		a.g.Expect(killed).NotTo(BeEmpty(), "the hub was killed at %s", p)
		t.Logf("hub killed %s (%s): the drill ended %s in %s", p, killed, d.Status.Phase, d.Status.EndTime.Sub(d.Status.StartTime.Time))
	}
}

// drill creates a drill of the application; an empty target takes the default. The drill
// named overtaken is kept for 10 minutes once it has its result.
func (a *app) drill(name, target string) client.ObjectKey {
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: name},
		Spec: v1alpha1.DRDrillSpec{DRPCName: a.key.Name, TargetCluster: target}}
	if name == "overtaken" {
		d.Spec.KeepFor = &metav1.Duration{Duration: 10 * time.Minute}
	}
	a.g.Expect(a.hub.Create(context.Background(), d)).To(Succeed())
	return client.ObjectKeyFromObject(d)
}

func (a *app) getDrill(g Gomega, key client.ObjectKey) *v1alpha1.DRDrill {
	d := &v1alpha1.DRDrill{}
	g.Expect(a.hub.Get(context.Background(), key, d)).To(Succeed())
	return d
}

// finishedDrill waits until the drill is in its final phase and its sandbox gone.
func (a *app) finishedDrill(key client.ObjectKey, phase v1alpha1.DrillPhase) *v1alpha1.DRDrill {
	var d *v1alpha1.DRDrill
	a.g.Eventually(func(g Gomega) {
		d = a.getDrill(g, key)
		g.Expect(d.Status.Phase).To(Equal(phase), "Accepted: %s", drillAccepted(d).Message)
		g.Expect(d.Finalizers).To(BeEmpty())
	}).Should(Succeed(), "drill %s ends %s", key.Name, phase)
	for _, name := range []string{lab.East, lab.West} {
		list := &v1alpha1.DrillSandboxList{}
		a.g.Expect(a.clusters[name].List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
		a.g.Expect(list.Items).To(BeEmpty(), "no sandbox is left on %s", name)
	}
	return d
}

func drillAccepted(d *v1alpha1.DRDrill) metav1.Condition {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDrillAccepted); c != nil {
		return *c
	}
	return metav1.Condition{Status: metav1.ConditionUnknown}
}

// expectDrillEvents waits until the drill has an event of each reason.
func (a *app) expectDrillEvents(name string, reasons ...string) {
	a.g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(a.hub.List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
		got := map[string]bool{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "DRDrill" && e.Regarding.Name == name {
				got[e.Reason] = true
			}
		}
		for _, r := range reasons {
			g.Expect(got).To(HaveKey(r), "events of DRDrill %s", name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// The hub judges a drill's check itself, for where its admission policy (drover-drill-check) is
// not installed, as in this suite: a check whose pod no sandbox may run is refused
// (CheckNotAllowed) before anything else is looked at, by the sandbox's level: restricted, or
// baseline in a namespace an administrator labelled drover.io/drill-pod-security=baseline.
func TestTheHubRefusesADrillWhoseCheckNoSandboxRuns(t *testing.T) {
	a := newApp(t, "hub-drill-check")
	ctx := context.Background()
	root := &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{HostPID: true, RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "x", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}}
	plain := &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}
	many := plain.DeepCopy()
	many.Parallelism = ptr.To[int32](100)
	reasonOf := func(check *batchv1.JobSpec) metav1.Condition {
		d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, GenerateName: "check-"},
			Spec: v1alpha1.DRDrillSpec{DRPCName: "no-such-application", Check: check}}
		a.g.Expect(a.hub.Create(ctx, d)).To(Succeed())
		a.g.Eventually(func(g Gomega) {
			g.Expect(a.getDrill(g, client.ObjectKeyFromObject(d)).Status.Phase).To(Equal(v1alpha1.DrillRefused))
		}).Should(Succeed())
		c := drillAccepted(a.getDrill(a.g, client.ObjectKeyFromObject(d)))
		t.Logf("%s: %s", c.Reason, c.Message)
		return c
	}
	c := reasonOf(root)
	a.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonCheckNotAllowed))
	a.g.Expect(c.Message).To(And(ContainSubstring(`violates PodSecurity "restricted:latest"`), ContainSubstring("privileged"), ContainSubstring("host namespaces")))
	a.g.Expect(reasonOf(many).Message).To(ContainSubstring("parallelism 100 is out of range: at most 4"))
	a.g.Expect(reasonOf(plain).Message).To(ContainSubstring("runAsNonRoot"), "a pod the restricted level refuses")

	ns := &corev1.Namespace{}
	a.g.Expect(a.hub.Get(ctx, client.ObjectKey{Name: a.ns}, ns)).To(Succeed())
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = map[string]string{"drover.io/drill-pod-security": "baseline"}
	a.g.Expect(a.hub.Patch(ctx, ns, patch)).To(Succeed())
	a.g.Expect(reasonOf(plain).Reason).To(Equal(v1alpha1.ReasonDRPCNotFound), "baseline admits the plain check: the drill is judged on")
	c = reasonOf(root)
	a.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonCheckNotAllowed), "baseline never admits a privileged pod")
	a.g.Expect(c.Message).To(ContainSubstring(`violates PodSecurity "baseline:latest"`))
}
