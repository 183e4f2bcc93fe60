package volsynclab_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/replication/volsync"
	"github.com/drover-io/drover/internal/tenancy"
)

// quiescer is a Deployment of one shell process on the lab kubelet, labelled app=quiesce, that
// the BeforeSync hook execs into.
func quiescer(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "quiesce"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quiesce"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "db", Image: "example.com/lab/shell",
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"}}},
			}}},
	}
	vrglab.OnKubelet(&d.Spec.Template.Spec)
	return d
}

// syncStarts records, by manual trigger, the start of each sync of a ReplicationSource
// (status.lastSyncStartTime, which VolSync sets while a sync runs), polled until ctx ends.
type syncStarts struct {
	mu     sync.Mutex
	starts map[string]time.Time
}

func watchSyncStarts(ctx context.Context, cl client.Client, key client.ObjectKey) *syncStarts {
	s := &syncStarts{starts: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			rs := &volsyncv1alpha1.ReplicationSource{}
			if cl.Get(ctx, key, rs) == nil && rs.Spec.Trigger != nil && rs.Status != nil && rs.Status.LastSyncStartTime != nil {
				s.mu.Lock()
				if _, seen := s.starts[rs.Spec.Trigger.Manual]; !seen {
					s.starts[rs.Spec.Trigger.Manual] = rs.Status.LastSyncStartTime.Time
				}
				s.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return s
}

func (s *syncStarts) of(trigger string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.starts[trigger]
	return t, ok
}

// hookRuns reads the hook's log: the start and end (Unix nanoseconds) of each run.
func hookRuns(g Gomega, log string) [][2]time.Time {
	raw, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	var runs [][2]time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		g.Expect(err).NotTo(HaveOccurred())
		if f[0] == "start" {
			runs = append(runs, [2]time.Time{time.Unix(0, ns)})
		} else if len(runs) > 0 {
			runs[len(runs)-1][1] = time.Unix(0, ns)
		}
	}
	return runs
}

// cycleHooked is a VolSync pair whose groups' recipe has the BeforeSync exec hook checkpoint in
// the pod of quiescer: it logs its start and end (Unix nanoseconds) to log and takes 2 s, or
// fails with exit code 3 and a message while the file fail exists.
type cycleHooked struct {
	volSyncPair
	source    client.ObjectKey
	log, fail string
}

func startCycleHooked(t *testing.T, g Gomega, ns string) cycleHooked {
	ctx := t.Context()
	dir := t.TempDir()
	c := cycleHooked{source: client.ObjectKey{Namespace: ns, Name: "data-db-0"}, log: filepath.Join(dir, "hook.log"), fail: filepath.Join(dir, "fail")}
	script := "if [ -e " + c.fail + " ]; then echo 'checkpoint refused: the database is read-only' >&2; exit 3; fi; " +
		"echo start $(date +%s%N) >> " + c.log + "; sleep 2; echo end $(date +%s%N) >> " + c.log
	hook := v1alpha1.Hook{Name: "checkpoint", Point: v1alpha1.HookBeforeSync, Timeout: &metav1.Duration{Duration: 20 * time.Second},
		Exec: &v1alpha1.ExecHook{Namespace: ns, PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "quiesce"}},
			Command: []string{"sh", "-c", script}}}
	vrglab.StartKubelet(t, g)
	c.volSyncPair = startVolSyncPair(t, g, ns, 1, func(group *v1alpha1.VolumeReplicationGroup) {
		group.Spec.SchedulingInterval = "8s"
		group.Spec.Recipe = &v1alpha1.VRGRecipe{Name: "db", Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{hook}}}
	})
	eastNS := &corev1.Namespace{}
	g.Expect(c.east.Get(ctx, client.ObjectKey{Name: ns}, eastNS)).To(Succeed())
	eastNS.Labels = map[string]string{tenancy.LabelHooks: tenancy.HooksEnabled}
	g.Expect(c.east.Update(ctx, eastNS)).To(Succeed())
	g.Expect(c.east.Create(ctx, quiescer(ns))).To(Succeed())
	hubCopy(ctx, g, c.east, c.eastGroup, c.west, c.westGroup, 1)
	return c
}

// dataProtected is the east group's DataProtected.
func (c cycleHooked) dataProtected(ctx context.Context, g Gomega) *metav1.Condition {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(c.east.Get(ctx, client.ObjectKeyFromObject(c.eastGroup), got)).To(Succeed())
	cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDataProtected)
	g.Expect(cond).NotTo(BeNil())
	return cond
}

// sourceOf is east's ReplicationSource.
func (c cycleHooked) sourceOf(ctx context.Context, g Gomega) *volsyncv1alpha1.ReplicationSource {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(c.east.Get(ctx, c.source, rs)).To(Succeed())
	g.Expect(rs.Spec.Trigger).NotTo(BeNil())
	g.Expect(rs.Status).NotTo(BeNil())
	return rs
}

// A group whose recipe has a BeforeSync hook syncs its VolSync PVC at manual triggers, one cycle
// per scheduling interval, each only after the hook ran: the hook logs its start and end and
// takes 2 s, and every sync of a cycle starts (lastSyncStartTime, whole seconds) after the
// start of that cycle's hook and no earlier than a second before its end. A hook failing with
// onError Fail holds the next cycle's sync, DataProtected says so with the hook's output, and the
// cycle after it syncs again once the hook passes. A relocation then takes the sources over from
// the cycles and loses no record.
func TestVolSyncSyncsOnlyAfterTheBeforeSyncHookOfEachInterval(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := t.Context()
	c := startCycleHooked(t, g, "volsync-cyclehooks")
	starts := watchSyncStarts(ctx, c.east, c.source)

	var synced []string
	g.Eventually(func(g Gomega) {
		rs := c.sourceOf(ctx, g)
		g.Expect(rs.Spec.Trigger.Schedule).To(BeNil(), "no cron schedule")
		last := rs.Status.LastManualSync
		if _, ok := volsync.CycleTime(last); ok && last == rs.Spec.Trigger.Manual && !slices.Contains(synced, last) {
			synced = append(synced, last)
		}
		g.Expect(len(synced)).To(BeNumerically(">=", 2))
	}).Should(Succeed(), "the source completes the syncs of two cycles")
	runs := hookRuns(g, c.log)
	for _, trigger := range synced {
		cycle, _ := volsync.CycleTime(trigger)
		start, ok := starts.of(trigger)
		g.Expect(ok).To(BeTrue(), "the start of the sync of %s was seen", trigger)
		var before *[2]time.Time
		for i := range runs {
			if !runs[i][0].Before(cycle) && runs[i][0].Before(start) && !runs[i][1].IsZero() {
				before = &runs[i]
			}
		}
		g.Expect(before).NotTo(BeNil(), "a hook ran in cycle %s before its sync started at %s (hook runs %v)", trigger, start, runs)
		g.Expect(before[1]).To(BeTemporally("<", start.Add(time.Second)),
			"the sync of %s started (%s, whole seconds) after its hook ended (%s)", trigger, start.Format(time.RFC3339), before[1].Format(time.RFC3339Nano))
		t.Logf("cycle %s: hook %s → %s, sync started %s", trigger, before[0].Format("15:04:05.000"), before[1].Format("15:04:05.000"), start.Format("15:04:05"))
	}
	expectAFailingHookHoldsTheSync(ctx, g, c)
	expectTheRelocationTakesOver(t, g, c)
}

// expectAFailingHookHoldsTheSync makes the hook fail: no sync is asked, DataProtected says why
// with the hook's output; once it passes again, the next cycle syncs.
func expectAFailingHookHoldsTheSync(ctx context.Context, g Gomega, c cycleHooked) {
	g.Expect(os.WriteFile(c.fail, nil, 0o600)).To(Succeed())
	var held string
	g.Eventually(func(g Gomega) {
		cond := c.dataProtected(ctx, g)
		g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonHookFailed))
		g.Expect(cond.Message).To(ContainSubstring("checkpoint refused: the database is read-only"))
		g.Expect(cond.Message).To(ContainSubstring("exit code 3"))
		g.Expect(cond.Message).To(ContainSubstring("did not run"))
		rs := c.sourceOf(ctx, g)
		g.Expect(rs.Status.LastManualSync).To(Equal(rs.Spec.Trigger.Manual), "the last sync completed")
		held = rs.Spec.Trigger.Manual
	}).Should(Succeed(), "DataProtected says the hook failed, with its output")
	g.Consistently(func(g Gomega) {
		g.Expect(c.sourceOf(ctx, g).Spec.Trigger.Manual).To(Equal(held), "no sync is asked while the hook fails")
	}).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	g.Expect(os.Remove(c.fail)).To(Succeed())
	g.Eventually(func(g Gomega) {
		rs := c.sourceOf(ctx, g)
		g.Expect(rs.Spec.Trigger.Manual).NotTo(Equal(held))
		g.Expect(rs.Status.LastManualSync).To(Equal(rs.Spec.Trigger.Manual))
		g.Expect(c.dataProtected(ctx, g).Reason).NotTo(Equal(v1alpha1.ReasonHookFailed))
	}).Should(Succeed(), "once the hook passes, the next cycle syncs")
}

// expectTheRelocationTakesOver relocates the group away from east: no cycle runs on the
// relocation's source, which runs the hook once more as a run of the relocation's action, and
// whose final sync takes over the sources from the cycles' trigger; west holds every record
// east wrote.
func expectTheRelocationTakesOver(t *testing.T, g Gomega, c cycleHooked) {
	ctx := t.Context()
	ns, pvc := c.source.Namespace, c.source.Name
	writer := runningWriters(ctx, g, c.east, ns, 1)[pvc]
	const request = "relocate-cycles"
	wrote := stopForRelocation(ctx, g, c.east, c.eastGroup, request, map[string]string{pvc: pvcImage(ctx, g, c.east, ns, pvc)})
	awaitFinalSync(ctx, g, c.east, c.eastGroup, request)
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(c.east.Get(ctx, client.ObjectKeyFromObject(c.eastGroup), got)).To(Succeed())
	g.Expect(got.Status.Hooks).To(ContainElement(And(HaveField("Name", "checkpoint"), HaveField("Action", got.Spec.Recipe.Action),
		HaveField("Result", v1alpha1.HookSucceeded))), "the relocation ran the hook as its own")
	onWest := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, c.west, ns, "volsync-"+pvc+"-dst"))
	w, _ := wrote[pvc].Writer(writer)
	kept, ok := onWest.Writer(writer)
	g.Expect(ok).To(BeTrue())
	for _, d := range records.Compare(wrote[pvc], onWest).Writers {
		g.Expect(d.OnlyInA).To(BeEmpty(), "west's destination lacks records of %s (east wrote %d, west has %d)", d.Writer, w.LastSeq, kept.LastSeq)
	}
	t.Logf("relocation: east wrote %d records, west's destination holds %d, lost 0", w.LastSeq, kept.LastSeq)
}
