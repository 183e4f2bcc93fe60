package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
)

// processDeployment is a Deployment db of one pod labelled app=db that the lab kubelet runs as a
// shell process, idle until it is stopped, its name in POD_NAME (an exec sees the container's
// environment).
func processDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "db"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "db", Image: "example.com/lab/shell",
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"},
					Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			}}},
	}
	vrglab.OnKubelet(&d.Spec.Template.Spec)
	return d
}

// execAt is an exec hook at point in the pods labelled app=db of ns.
func execAt(name string, point v1alpha1.HookPoint, ns string, onError v1alpha1.HookOnError, script string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Point: point, OnError: onError, Timeout: &metav1.Duration{Duration: 30 * time.Second},
		Exec: &v1alpha1.ExecHook{Namespace: ns, PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Command: []string{"sh", "-c", script}}}
}

// hookedApp starts, on east, the process Deployment db and a primary group that protects its
// namespace with kubeObjectProtection and carries a recipe of hooks, and waits until the group
// has captured the namespace.
func hookedApp(t *testing.T, g Gomega, ns string, hooks ...v1alpha1.Hook) (client.Client, *v1alpha1.VolumeReplicationGroup) {
	ctx := t.Context()
	east := vrglab.ClusterClient(t, lab.East)
	vrglab.StartKubelet(t, g)
	g.Expect(east.Create(ctx, hooksNamespace(ns))).To(Succeed())
	g.Expect(east.Create(ctx, processDeployment(ns))).To(Succeed())
	profiles, _ := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	group.Spec.Recipe = &v1alpha1.VRGRecipe{Name: "db", Action: "2026-12-07T05:00:00Z", Spec: v1alpha1.DRRecipeSpec{Hooks: hooks}}
	g.Expect(east.Create(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		g.Expect(got.Annotations).To(HaveKey(vrg.AnnotationKubeObjectsCapturedAt))
		d := &appsv1.Deployment{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, d)).To(Succeed())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
	}).Should(Succeed(), "east's group is primary with a capture and the process runs")
	return east, group
}

// relocateFrom demotes the group for a relocation with a final sync.
func relocateFrom(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup) {
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
		got.Spec.FinalSyncRequest = "relocate-hooks"
		g.Expect(cl.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}

// runsOf returns the group's hook runs by name.
func runsOf(g Gomega, ctx context.Context, cl client.Client, group *v1alpha1.VolumeReplicationGroup) (*v1alpha1.VolumeReplicationGroup, map[string]v1alpha1.HookRun) {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
	runs := map[string]v1alpha1.HookRun{}
	for _, r := range got.Status.Hooks {
		runs[r.Name] = r
	}
	return got, runs
}

// workloadRuns reports whether the Deployment db is there, not being deleted, with its pod
// running.
func workloadRuns(g Gomega, ctx context.Context, cl client.Client, ns string) {
	d := &appsv1.Deployment{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, d)).To(Succeed())
	g.Expect(d.DeletionTimestamp).To(BeNil())
	pods := &corev1.PodList{}
	g.Expect(cl.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "db"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
	g.Expect(pods.Items[0].DeletionTimestamp).To(BeNil())
}

// A relocation's source runs its BeforeSync hook, then its BeforeStop hooks, in the running
// pod, before anything stops the workload: while the stop hook runs, the Deployment and its pod
// are there and DataReady says which hook the relocation waits for; a failing hook with
// onError Continue is recorded and passed; once the hooks passed the workload is removed and the
// group is Secondary.
func TestARelocationsSourceRunsItsStopHooksBeforeItRemovesTheWorkload(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(45 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := t.Context()
	const ns = "hooks-stop"
	east, group := hookedApp(t, g, ns,
		execAt("flush", v1alpha1.HookBeforeSync, ns, "", `echo "flushed in $POD_NAME"`),
		execAt("optional", v1alpha1.HookBeforeStop, ns, v1alpha1.HookContinue, `echo "no table to vacuum" >&2; exit 4`),
		execAt("stop", v1alpha1.HookBeforeStop, ns, "", `sleep 4; echo stopped cleanly`))

	relocateFrom(ctx, g, east, group)
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, east, group)
		g.Expect(runs).To(HaveKeyWithValue("stop", HaveField("Result", v1alpha1.HookRunning)))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonHookRunning), c.Message)
		g.Expect(c.Message).To(ContainSubstring("waiting for hook stop (exec, attempt 1) at BeforeStop"))
		g.Expect(got.Status.State).NotTo(Equal(v1alpha1.StateSecondary))
		workloadRuns(g, ctx, east, ns)
	}).Should(Succeed(), "the stop hook runs while the workload still runs")

	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, east, group)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(runs["flush"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(runs["flush"].Output).To(HavePrefix("flushed in db-"))
		g.Expect(runs["optional"].Result).To(Equal(v1alpha1.HookContinued))
		g.Expect(runs["optional"].ExitCode).To(HaveValue(Equal(int32(4))))
		g.Expect(runs["optional"].Output).To(Equal("no table to vacuum\n"))
		g.Expect(runs["stop"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(runs["stop"].Output).To(Equal("stopped cleanly\n"))
		g.Expect(runs["stop"].Duration.Duration).To(BeNumerically(">=", 3*time.Second))
		err := east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the workload is removed once the hooks passed: %v", err)
	}).Should(Succeed(), "after the hooks the workload is removed and the group is Secondary")
	vrglab.ExpectEvents(ctx, g, east, group, v1alpha1.EventHookSucceeded, v1alpha1.EventHookContinued)
}

// A BeforeStop hook with onError Fail that fails holds the relocation at the hook: DataReady
// False HookFailed names the hook, its pod, exit code and output and how to go on, and the
// workload runs on. A person's Retry of attempt 1 runs attempt 2; a Continue of attempt 2
// passes it over and the relocation goes on. A hook naming a namespace the group does not
// protect is refused without any exec.
func TestAFailedStopHookHoldsTheRelocationUntilAPersonRetriesOrContinuesIt(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(45 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := t.Context()
	const ns, other = "hooks-fail", "hooks-fail-other"
	east := vrglab.ClusterClient(t, lab.East)
	// Another team's namespace, with a pod the selector would pick: the hook is refused.
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})).To(Succeed())
	g.Expect(east.Create(ctx, processDeployment(other))).To(Succeed())
	east, group := hookedApp(t, g, ns,
		execAt("elsewhere", v1alpha1.HookBeforeSync, other, v1alpha1.HookContinue, "exit 9"),
		execAt("gate", v1alpha1.HookBeforeStop, ns, "", `echo "replication lag too high"; exit 3`))

	relocateFrom(ctx, g, east, group)
	expectFailed := func(attempt int32) {
		g.Eventually(func(g Gomega) {
			got, runs := runsOf(g, ctx, east, group)
			g.Expect(runs["gate"].Attempt).To(Equal(attempt))
			g.Expect(runs["gate"].Result).To(Equal(v1alpha1.HookFailed))
			c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonHookFailed))
			for _, s := range []string{"hook gate (exec at BeforeStop, attempt", "pod hooks-fail/db-", "exit code 3", "replication lag too high",
				"drover relocate db --retry", "drover relocate db --continue"} {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
			g.Expect(got.Status.State).NotTo(Equal(v1alpha1.StateSecondary))
			g.Expect(runs["elsewhere"].Result).To(Equal(v1alpha1.HookContinued))
			g.Expect(runs["elsewhere"].ExitCode).To(BeNil(), "nothing was executed")
			g.Expect(runs["elsewhere"].Message).To(ContainSubstring("namespace hooks-fail-other, which this group does not protect"))
		}).Should(Succeed(), "attempt %d of the gate hook failed and holds the relocation", attempt)
		g.Consistently(func(g Gomega) { workloadRuns(g, ctx, east, ns) }, 2*time.Second).Should(Succeed(), "the workload runs on")
	}
	expectFailed(1)
	decide(ctx, g, east, group, v1alpha1.HookDecision{Hook: "gate", Attempt: 1, Decision: v1alpha1.HookRetry})
	expectFailed(2)
	decide(ctx, g, east, group, v1alpha1.HookDecision{Hook: "gate", Attempt: 2, Decision: v1alpha1.HookContinueAction})
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, east, group)
		g.Expect(runs["gate"].Result).To(Equal(v1alpha1.HookPassedOver))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		err := east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the workload is removed once the hook is passed over: %v", err)
	}).Should(Succeed(), "the Continue decision lets the relocation go on")
	vrglab.ExpectEvents(ctx, g, east, group, v1alpha1.EventHookFailed, v1alpha1.EventHookPassedOver)
}

// decide writes a person's decision into the group's recipe, as the hub does from the DRPC's.
func decide(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, d v1alpha1.HookDecision) {
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		got.Spec.Recipe.Decisions = []v1alpha1.HookDecision{d}
		g.Expect(cl.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}
