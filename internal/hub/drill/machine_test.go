package drill

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

// world is a hub and two managed clusters of fake clients, with the DRDrill reconciler over a
// fake gateway: the application runs on east, Protected, and the tests play west's agent by
// writing the DrillSandbox's status and removing its finalizer.
type world struct {
	t        *testing.T
	g        *WithT
	hub      client.Client
	clusters map[string]client.Client
	r        *Reconciler
	now      time.Time
}

// agentFinalizer stands for the agent's finalizer on a DrillSandbox.
const agentFinalizer = "drover.io/test-agent"

func newWorld(t *testing.T) *world {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	hub := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.DRPlacementControl{}, &v1alpha1.DRDrill{}).Build()
	clusters := map[string]client.Client{}
	for _, name := range []string{"east", "west"} {
		clusters[name] = fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.DrillSandbox{}).Build()
	}
	w := &world{t: t, g: NewWithT(t), hub: hub, clusters: clusters, now: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	w.r = &Reconciler{Client: hub, Gateway: gateway.NewFake(clusters), Now: func() time.Time { return w.now }}
	ctx := context.Background()
	w.g.Expect(hub.Create(ctx, &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pair"}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"}, SchedulingInterval: "10s",
	}})).To(Succeed())
	drpc := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"},
		Spec:       v1alpha1.DRPlacementControlSpec{DRPolicyRef: v1alpha1.PolicyReference{Name: "pair"}, PreferredCluster: "east", ProtectedNamespaces: []string{"app"}},
	}
	w.g.Expect(hub.Create(ctx, drpc)).To(Succeed())
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.CurrentPrimary = v1alpha1.PhaseDeployed, "east"
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProtected, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: "replicates"})
	})
	return w
}

// setDRPC changes the DRPlacementControl (spec and status) and stamps a fresh group sync.
func (w *world) setDRPC(change func(*v1alpha1.DRPlacementControl)) {
	w.t.Helper()
	d := &v1alpha1.DRPlacementControl{}
	w.g.Expect(w.hub.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "db"}, d)).To(Succeed())
	sync := metav1.NewTime(w.now.Add(-time.Second))
	d.Status.LastGroupSyncTime = &sync
	change(d)
	status := d.Status.DeepCopy()
	w.g.Expect(w.hub.Update(context.Background(), d)).To(Succeed())
	d.Status = *status
	w.g.Expect(w.hub.Status().Update(context.Background(), d)).To(Succeed())
}

// tick advances the clock by dt, with the primary syncing meanwhile.
func (w *world) tick(dt time.Duration) {
	w.t.Helper()
	w.now = w.now.Add(dt)
	w.setDRPC(func(*v1alpha1.DRPlacementControl) {})
}

// create creates a drill of the application, with the UID the API server would give it.
func (w *world) create(name string, change func(*v1alpha1.DRDrill)) client.ObjectKey {
	w.t.Helper()
	d := &v1alpha1.DRDrill{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", len(name)*7919)),
			CreationTimestamp: metav1.NewTime(w.now)},
		Spec: v1alpha1.DRDrillSpec{DRPCName: "db"},
	}
	if change != nil {
		change(d)
	}
	w.g.Expect(w.hub.Create(context.Background(), d)).To(Succeed())
	return client.ObjectKeyFromObject(d)
}

// reconcile runs one reconcile of a drill, which must not fail.
func (w *world) reconcile(key client.ObjectKey) ctrl.Result {
	w.t.Helper()
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	w.g.Expect(err).NotTo(HaveOccurred())
	return res
}

func (w *world) drill(key client.ObjectKey) *v1alpha1.DRDrill {
	w.t.Helper()
	d := &v1alpha1.DRDrill{}
	w.g.Expect(w.hub.Get(context.Background(), key, d)).To(Succeed())
	return d
}

// sandbox returns the drill's DrillSandbox on west; nil when there is none.
func (w *world) sandbox(key client.ObjectKey) *v1alpha1.DrillSandbox {
	w.t.Helper()
	box := &v1alpha1.DrillSandbox{}
	err := w.clusters["west"].Get(context.Background(), sandboxKey(w.drill(key)), box)
	if apierrors.IsNotFound(err) {
		return nil
	}
	w.g.Expect(err).NotTo(HaveOccurred())
	return box
}

// agentReports plays west's agent: its finalizer on the sandbox, and status as given.
func (w *world) agentReports(key client.ObjectKey, status v1alpha1.DrillSandboxStatus) {
	w.t.Helper()
	box := w.sandbox(key)
	w.g.Expect(box).NotTo(BeNil(), "west has the drill's sandbox")
	if controllerutil.AddFinalizer(box, agentFinalizer) {
		w.g.Expect(w.clusters["west"].Update(context.Background(), box)).To(Succeed())
	}
	box.Status = status
	w.g.Expect(w.clusters["west"].Status().Update(context.Background(), box)).To(Succeed())
}

// agentRemoves plays west's agent removing a deleted sandbox.
func (w *world) agentRemoves(key client.ObjectKey) {
	w.t.Helper()
	box := w.sandbox(key)
	w.g.Expect(box).NotTo(BeNil())
	w.g.Expect(box.DeletionTimestamp).NotTo(BeNil(), "the hub deleted the sandbox")
	controllerutil.RemoveFinalizer(box, agentFinalizer)
	w.g.Expect(w.clusters["west"].Update(context.Background(), box)).To(Succeed())
}

func accepted(d *v1alpha1.DRDrill) metav1.Condition {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDrillAccepted); c != nil {
		return *c
	}
	return metav1.Condition{Status: metav1.ConditionUnknown}
}

// passedStatus is what an agent reports of a sandbox that started in dt and passed its check.
func (w *world) passedStatus(start time.Time, dt time.Duration) v1alpha1.DrillSandboxStatus {
	t := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(start.Add(d))) }
	return v1alpha1.DrillSandboxStatus{
		Mode: v1alpha1.DrillModeFull, Result: v1alpha1.DrillResultPassed, ReadyTime: t(dt),
		Namespaces: []v1alpha1.DrillSandboxNamespace{{Source: "app", Sandbox: "app-drill-x"}},
		Volumes: []v1alpha1.DrillVolume{
			{PVCNamespace: "app", PVCName: "data-0", PointTime: t(-4 * time.Second)},
			{PVCNamespace: "app", PVCName: "data-1", PointTime: t(-9 * time.Second)},
		},
		Steps: []v1alpha1.DrillStep{
			{Name: "CopyingVolumes", Started: t(time.Second), Finished: t(dt / 2), Result: v1alpha1.DrillResultPassed},
			{Name: "StartingWorkloads", Started: t(dt / 2), Finished: t(dt), Result: v1alpha1.DrillResultPassed},
		},
		Check: &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultPassed, Message: "the Job succeeded",
			LogTail: "From container check of pod drover-drill-check-abcde (exit code 0):\nrows in orders: 1042\n"},
	}
}

func TestADrillIsRefusedWithAReasonAndWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name, reason, says string
		drill              func(*v1alpha1.DRDrill)
		drpc               func(*v1alpha1.DRPlacementControl)
	}{
		{name: "the application does not exist", reason: v1alpha1.ReasonDRPCNotFound, says: "name the application's DRPlacementControl",
			drill: func(d *v1alpha1.DRDrill) { d.Spec.DRPCName = "nothing" }},
		{name: "the application is failing over", reason: v1alpha1.ReasonNotProtected, says: "once its action has completed",
			drpc: func(d *v1alpha1.DRPlacementControl) { d.Status.Phase = v1alpha1.PhaseFailingOver }},
		{name: "a failover is asked for and not begun", reason: v1alpha1.ReasonNotProtected, says: "not settled",
			drpc: func(d *v1alpha1.DRPlacementControl) {
				d.Spec.Action, d.Spec.FailoverCluster = v1alpha1.ActionFailover, "west"
			}},
		{name: "the application is not Protected", reason: v1alpha1.ReasonNotProtected, says: "once `drover status db` shows it Protected",
			drpc: func(d *v1alpha1.DRPlacementControl) {
				apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProtected, Status: metav1.ConditionFalse, Reason: "SyncStale", Message: "stale"})
			}},
		{name: "the target is the primary", reason: v1alpha1.ReasonBadTarget, says: "name the peer",
			drill: func(d *v1alpha1.DRDrill) { d.Spec.TargetCluster = "east" }},
		{name: "the target is not in the policy", reason: v1alpha1.ReasonBadTarget, says: "not a cluster of the DRPolicy pair",
			drill: func(d *v1alpha1.DRDrill) { d.Spec.TargetCluster = "north" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.drpc != nil {
				w.setDRPC(tc.drpc)
			}
			key := w.create("d", tc.drill)
			w.reconcile(key)
			d := w.drill(key)
			w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRefused))
			c := accepted(d)
			w.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			w.g.Expect(c.Reason).To(Equal(tc.reason), c.Message)
			w.g.Expect(c.Message).To(ContainSubstring(tc.says))
			w.g.Expect(d.Status.EndTime).NotTo(BeNil())
			w.g.Expect(w.sandbox(key)).To(BeNil(), "no sandbox for a refused drill")
			w.reconcile(key)
			w.g.Expect(w.drill(key).Finalizers).To(BeEmpty(), "a final drill holds no finalizer")
		})
	}
}

func TestASecondDrillOfTheApplicationIsRefusedWhileTheFirstRuns(t *testing.T) {
	w := newWorld(t)
	first := w.create("first", nil)
	w.reconcile(first)
	w.g.Expect(w.drill(first).Status.Phase).To(Equal(v1alpha1.DrillRunning))
	second := w.create("second", nil)
	w.reconcile(second)
	c := accepted(w.drill(second))
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonDrillRunning))
	w.g.Expect(c.Message).To(ContainSubstring("drill first of db runs"))
}

func TestADrillThatPassesIsRecordedKeptAndTornDown(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", func(d *v1alpha1.DRDrill) { d.Spec.KeepFor = &metav1.Duration{Duration: time.Minute} })
	w.reconcile(key)
	d := w.drill(key)
	start := d.Status.StartTime.Time
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRunning))
	w.g.Expect(d.Status.TargetCluster).To(Equal("west"), "the peer of the primary by default")
	w.g.Expect(d.Status.PrimaryCluster).To(Equal("east"))
	w.g.Expect(d.Finalizers).To(ContainElement(Finalizer))
	w.reconcile(key)
	box := w.sandbox(key)
	w.g.Expect(box).NotTo(BeNil(), "the sandbox is asked of west")
	w.g.Expect(box.Namespace).To(Equal("app"))
	w.g.Expect(box.Name).To(MatchRegexp(`^drill-[a-z0-9]{1,8}$`))
	w.g.Expect(box.Spec.VRGName).To(Equal("db"))
	w.g.Expect(w.clusters["east"].List(context.Background(), &v1alpha1.DrillSandboxList{})).To(Succeed())

	w.tick(20 * time.Second)
	w.agentReports(key, w.passedStatus(start, 17*time.Second))
	w.reconcile(key)
	d = w.drill(key)
	w.g.Expect(d.Status.Result).To(Equal(v1alpha1.DrillResultPassed))
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRunning), "kept for keepFor")
	w.g.Expect(*d.Status.RTOSeconds).To(BeEquivalentTo(17))
	w.g.Expect(*d.Status.RPOSeconds).To(BeEquivalentTo(9), "the worst volume's point")
	w.g.Expect(*d.Status.Volumes[0].RPOSeconds).To(BeEquivalentTo(4))
	w.g.Expect(d.Status.Mode).To(Equal(v1alpha1.DrillModeFull))
	w.g.Expect(d.Status.Check.Result).To(Equal(v1alpha1.DrillResultPassed))
	w.g.Expect(d.Status.Check.LogTail).To(Equal("From container check of pod drover-drill-check-abcde (exit code 0):\nrows in orders: 1042\n"), "the agent's log tail is kept")
	w.g.Expect(d.Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultPassed))
	w.g.Expect(stepNames(d)).To(Equal([]string{stepAccepted, "CopyingVolumes", "StartingWorkloads", stepKept}))

	w.tick(59 * time.Second)
	w.reconcile(key)
	w.g.Expect(w.sandbox(key).DeletionTimestamp).To(BeNil(), "still kept")
	w.tick(time.Second)
	w.reconcile(key)
	d = w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillTearingDown))
	w.g.Expect(w.sandbox(key).DeletionTimestamp).NotTo(BeNil(), "the hub deleted the sandbox")
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillTearingDown), "until the agent has removed it")

	w.tick(3 * time.Second)
	w.agentRemoves(key)
	w.reconcile(key)
	d = w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillPassed))
	w.g.Expect(d.Status.Teardown.Result).To(Equal(v1alpha1.DrillResultPassed))
	w.g.Expect(d.Status.EndTime.Time.Equal(w.now)).To(BeTrue(), "ended now")
	w.g.Expect(stepNames(d)).To(Equal([]string{stepAccepted, "CopyingVolumes", "StartingWorkloads", stepKept, stepTearingDown}))
	for _, s := range d.Status.Steps {
		w.g.Expect(s.Finished).NotTo(BeNil(), "step %s has its duration", s.Name)
	}
	w.g.Expect(d.Status.Steps[3].Finished.Sub(d.Status.Steps[3].Started.Time)).To(Equal(time.Minute))
	w.g.Expect(d.Status.Steps[4].Finished.Sub(d.Status.Steps[4].Started.Time)).To(Equal(3 * time.Second))
	w.reconcile(key)
	w.g.Expect(w.drill(key).Finalizers).To(BeEmpty())
}

func stepNames(d *v1alpha1.DRDrill) []string {
	var out []string
	for _, s := range d.Status.Steps {
		out = append(out, s.Name)
	}
	return out
}

func TestADrillPastItsTimeoutFailsAndIsTornDown(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", func(d *v1alpha1.DRDrill) { d.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Minute} })
	w.reconcile(key)
	w.reconcile(key)
	w.agentReports(key, v1alpha1.DrillSandboxStatus{Message: "waiting for the workloads to be Ready",
		Steps: []v1alpha1.DrillStep{{Name: "StartingWorkloads", Started: ptr.To(metav1.NewTime(w.now))}}})
	w.now = w.now.Add(4 * time.Minute)
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillRunning))
	w.now = w.now.Add(time.Minute)
	w.reconcile(key)
	d := w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillTearingDown))
	w.g.Expect(d.Status.Result).To(Equal(v1alpha1.DrillResultFailed))
	c := accepted(d)
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonDrillTimedOut))
	w.g.Expect(c.Message).To(ContainSubstring("waiting for the workloads to be Ready"))
	w.g.Expect(d.Status.Steps[1].Result).To(Equal(v1alpha1.DrillResultSkipped), "the step cut short")
	w.agentRemoves(key)
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillFailed))
}

func TestAFailoverAskedForDuringADrillAbortsIt(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", nil)
	w.reconcile(key)
	w.reconcile(key)
	w.agentReports(key, v1alpha1.DrillSandboxStatus{})
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcile(key)
	d := w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillTearingDown))
	c := accepted(d)
	w.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonActionOvertook))
	w.g.Expect(c.Message).To(ContainSubstring("asked for Failover"))
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.LastGroupSyncTime = v1alpha1.PhaseFailingOver, nil
	})
	w.agentRemoves(key)
	w.reconcile(key)
	d = w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillAborted))
	w.g.Expect(d.Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultPassed), "the failover's own missing syncs are not the drill's")
}

func TestAPrimaryThatStopsSyncingDuringADrillIsRecorded(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", nil)
	w.reconcile(key)
	w.reconcile(key)
	w.now = w.now.Add(25 * time.Second) // the last sync is 26 s old, the interval 10 s
	w.reconcile(key)
	p := w.drill(key).Status.PrimaryReplication
	w.g.Expect(p.Result).To(Equal(v1alpha1.DrillResultFailed))
	w.g.Expect(p.Message).To(ContainSubstring("26s old, more than twice the interval 10s"))
	w.setDRPC(func(*v1alpha1.DRPlacementControl) {})
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultFailed), "once failed, the record stays")
}

func TestDeletingARunningDrillTearsItsSandboxDown(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", nil)
	w.reconcile(key)
	w.reconcile(key)
	w.agentReports(key, v1alpha1.DrillSandboxStatus{})
	w.g.Expect(w.hub.Delete(context.Background(), w.drill(key))).To(Succeed())
	w.reconcile(key)
	w.g.Expect(w.drill(key).Finalizers).To(ContainElement(Finalizer), "held until the sandbox is gone")
	w.agentRemoves(key)
	w.reconcile(key)
	w.g.Expect(apierrors.IsNotFound(w.hub.Get(context.Background(), key, &v1alpha1.DRDrill{}))).To(BeTrue())
}

func TestTheNewestFinishedDrillsAreKeptAsHistory(t *testing.T) {
	w := newWorld(t)
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) { d.Spec.DrillHistoryLimit = ptr.To[int32](2) })
	var keys []client.ObjectKey
	for i := range 4 {
		w.now = w.now.Add(time.Minute)
		keys = append(keys, w.create(fmt.Sprintf("d%d", i), func(d *v1alpha1.DRDrill) { d.Spec.TargetCluster = "east" }))
		w.reconcile(keys[i]) // refused: a finished drill
		w.reconcile(keys[i])
	}
	list := &v1alpha1.DRDrillList{}
	w.g.Expect(w.hub.List(context.Background(), list)).To(Succeed())
	var names []string
	for _, d := range list.Items {
		names = append(names, d.Name)
	}
	w.g.Expect(names).To(ConsistOf("d2", "d3"))
}

func TestWithRPOTakesTheAgeOfEachPointAtTheStart(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	vols, worst := withRPO([]v1alpha1.DrillVolume{
		{PVCName: "a", PointTime: ptr.To(metav1.NewTime(start.Add(-3 * time.Second)))},
		{PVCName: "b"},
		{PVCName: "c", PointTime: ptr.To(metav1.NewTime(start.Add(2 * time.Second)))},
	}, start)
	g := NewWithT(t)
	g.Expect(*vols[0].RPOSeconds).To(BeEquivalentTo(3))
	g.Expect(vols[1].RPOSeconds).To(BeNil(), "no point, no RPO")
	g.Expect(*vols[2].RPOSeconds).To(BeEquivalentTo(0), "a point after the start counts as no loss")
	g.Expect(*worst).To(BeEquivalentTo(3))
}

func TestADrillWhoseTargetStopsAnsweringFailsAtItsTimeoutAndIsTornDownWhenItAnswers(t *testing.T) {
	w := newWorld(t)
	gw := gateway.NewFake(w.clusters)
	w.r.Gateway = gw
	key := w.create("d", nil)
	w.reconcile(key)
	w.reconcile(key)
	w.agentReports(key, v1alpha1.DrillSandboxStatus{})
	gw.SetDown("west", true)
	w.tick(30 * time.Minute)
	w.reconcile(key)
	d := w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillTearingDown))
	w.g.Expect(accepted(d).Message).To(ContainSubstring("the target cluster does not answer"))
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillTearingDown), "the teardown waits for west")
	gw.SetDown("west", false)
	w.reconcile(key)
	w.agentRemoves(key)
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillFailed))
}

// A hub that has just started reports Protected Unknown until it has probed the clusters: a
// drill waits for it rather than being refused, up to its timeout.
func TestADrillWaitsWhileProtectedIsUnknown(t *testing.T) {
	w := newWorld(t)
	unknown := func(d *v1alpha1.DRPlacementControl) {
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProtected, Status: metav1.ConditionUnknown,
			Reason: v1alpha1.ReasonUnknown, Message: "east is unreachable: cluster east has not answered a probe yet"})
	}
	w.setDRPC(unknown)
	key := w.create("waits", nil)
	w.reconcile(key)
	d := w.drill(key)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillPending))
	w.g.Expect(accepted(d).Status).To(Equal(metav1.ConditionUnknown))
	w.g.Expect(accepted(d).Message).To(ContainSubstring("has not answered a probe yet"))
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) {
		apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProtected, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded})
	})
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.Phase).To(Equal(v1alpha1.DrillRunning))

	// Another application's world, no drill running: a drill that waits past its timeout.
	w = newWorld(t)
	w.setDRPC(unknown)
	late := w.create("late", nil)
	w.tick(31 * time.Minute)
	w.setDRPC(unknown)
	w.reconcile(late)
	d = w.drill(late)
	w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRefused), "past its timeout")
	w.g.Expect(accepted(d).Reason).To(Equal(v1alpha1.ReasonNotProtected))
}

// A pass that sees no last group sync (the primary not answering for a moment, a hub just
// started) does not judge the primary's replication; the next sync seen does.
func TestAPrimaryReplicationIsJudgedOnTheSyncsTheHubSees(t *testing.T) {
	w := newWorld(t)
	key := w.create("d", nil)
	w.reconcile(key)
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultPassed))
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) { d.Status.LastGroupSyncTime = nil })
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultPassed), "no sync seen: no judgement")
	w.now = w.now.Add(time.Minute)
	w.setDRPC(func(d *v1alpha1.DRPlacementControl) { d.Status.LastGroupSyncTime.Time = w.now.Add(-time.Minute) })
	w.reconcile(key)
	w.g.Expect(w.drill(key).Status.PrimaryReplication.Result).To(Equal(v1alpha1.DrillResultFailed), "the sync seen next is a minute old")
}
