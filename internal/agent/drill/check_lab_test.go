package drill_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/drill"
	clidrill "github.com/drover-io/drover/internal/cli/drill"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/story"
)

// checkJob is a check Job's spec; a node selector that no node matches keeps its pod Pending,
// and its deadline then fails it.
func checkJob(nodeSelector map[string]string) *batchv1.JobSpec {
	return restricted(&batchv1.JobSpec{
		BackoffLimit:          ptr.To(int32(0)),
		ActiveDeadlineSeconds: ptr.To(int64(5)),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  nodeSelector,
			Containers:    []corev1.Container{{Name: "check", Image: "lab/check", Command: []string{"check"}}},
		}},
	})
}

// restricted gives a check Job's pod what the restricted Pod Security Standard asks, which a
// sandbox enforces: a non-root user, the runtime's seccomp profile, no privilege escalation, no
// capability.
func restricted(spec *batchv1.JobSpec) *batchv1.JobSpec {
	pod := &spec.Template.Spec
	pod.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for i := range pod.Containers {
		pod.Containers[i].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	return spec
}

// TestADrillRunsItsCheckJobInTheSandbox drills with a check Job that succeeds, then with one that
// fails: the first sandbox passes with the check Passed, the second fails with the Job's reason.
func TestADrillRunsItsCheckJobInTheSandbox(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)

	sb := p.sandbox(g, "checkok", func(sb *v1alpha1.DrillSandbox) { sb.Spec.Check = checkJob(nil) })
	got := p.awaitResult(t, g, sb)
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultPassed), "the sandbox passed: %s", got.Status.Message)
	g.Expect(got.Status.Check).NotTo(BeNil())
	g.Expect(got.Status.Check.Result).To(Equal(v1alpha1.DrillResultPassed), got.Status.Check.Message)
	g.Expect(got.Status.Check.LogTail).To(And(HavePrefix("(no termination message: "), ContainSubstring("pod %s-", drill.CheckJob)),
		"a kwok pod reports no message, and the tail says so, naming it")
	g.Expect(got.Status.ReadyTime).NotTo(BeNil())
	job := &batchv1.Job{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: drill.SandboxNamespace(p.ns, "checkok"), Name: drill.CheckJob}, job)).To(Succeed(), "the check ran in the sandbox")
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "checkok")

	sb = p.sandbox(g, "checkko", func(sb *v1alpha1.DrillSandbox) {
		sb.Spec.Check = checkJob(map[string]string{"kubernetes.io/hostname": "no-such-node"})
	})
	got = p.awaitResult(t, g, sb)
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultFailed))
	g.Expect(got.Status.Check).NotTo(BeNil())
	g.Expect(got.Status.Check.Result).To(Equal(v1alpha1.DrillResultFailed))
	g.Expect(got.Status.Check.Message).To(ContainSubstring("DeadlineExceeded"), "the Job's reason is reported")
	g.Expect(got.Status.Check.LogTail).To(HavePrefix("(no termination message: "), "a pod that never ran reports none")
	g.Expect(got.Status.ReadyTime).To(BeNil(), "a sandbox whose check failed is never ready")
	last := got.Status.Steps[len(got.Status.Steps)-1]
	g.Expect(last.Name).To(Equal(drill.StepChecking))
	g.Expect(last.Result).To(Equal(v1alpha1.DrillResultFailed))
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "checkko")
}

// TestADrillSandboxDeletedWhileItIsBuiltLeavesNothing deletes a DrillSandbox as soon as its
// first volume is held, mid-build: its finalizer still removes everything it made.
func TestADrillSandboxDeletedWhileItIsBuiltLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	sb := p.sandbox(g, "midway", nil)
	got := &v1alpha1.DrillSandbox{}
	g.Eventually(func(g Gomega) {
		g.Expect(p.west.Get(ctx, client.ObjectKeyFromObject(sb), got)).To(Succeed())
		g.Expect(got.Status.Volumes).NotTo(BeEmpty(), "a volume is chosen and held")
	}).WithPolling(50 * time.Millisecond).Should(Succeed())
	g.Expect(got.Status.Result).To(BeEmpty(), "deleted before the sandbox was built")
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "midway")
}

// TestAVolumeReplicationDrillChecksReadiness drills an application replicated by the lab's
// VolumeReplication storage: no copy of its mirrored secondary images can be made, so the sandbox
// starts nothing and lists what it checked (metadata, StorageClasses, replication, the objects
// dry-run) and what it could not (each volume's copy, the workloads).
func TestAVolumeReplicationDrillChecksReadiness(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedCase(t, story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Mode: story.SelfContained, Namespace: "drilled-volrep", Replicas: 1})
	sb := p.sandbox(g, "ready", nil)
	got := p.awaitResult(t, g, sb)
	g.Expect(got.Status.Mode).To(Equal(v1alpha1.DrillModeReadiness))
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultPassed), "readiness passed: %s %+v", got.Status.Message, got.Status.Readiness)
	results := map[string]v1alpha1.DrillResult{}
	for _, c := range got.Status.Readiness {
		results[c.Name] = c.Result
	}
	g.Expect(results).To(Equal(map[string]v1alpha1.DrillResult{
		"PV and PVC metadata decoded":                  v1alpha1.DrillResultPassed,
		"StorageClass " + lab.BlockStorageClass:        v1alpha1.DrillResultPassed,
		"replication healthy":                          v1alpha1.DrillResultPassed,
		"objects accepted by the API server (dry run)": v1alpha1.DrillResultPassed,
		"copy of PVC drilled-volrep/data-db-0":         v1alpha1.DrillResultSkipped,
		"workloads started":                            v1alpha1.DrillResultSkipped,
	}))
	g.Expect(got.Status.Check.Result).To(Equal(v1alpha1.DrillResultSkipped))
	err := p.west.Get(ctx, client.ObjectKey{Namespace: drill.SandboxNamespace(p.ns, "ready"), Name: "db"}, &appsv1.StatefulSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is started in readiness mode: %v", err)
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "ready")
}

// failingCheck is a check Job that really fails: its pod tolerates the lab kubelet's taint and
// selects its node, which runs drover's image as a process, with a flag drover does not know.
func failingCheck() *batchv1.JobSpec {
	return restricted(&batchv1.JobSpec{
		BackoffLimit:          ptr.To(int32(0)),
		ActiveDeadlineSeconds: ptr.To(int64(120)),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			NodeSelector:                 map[string]string{corev1.LabelHostname: kubelet.DefaultNodeName},
			Tolerations:                  []corev1.Toleration{{Key: kubelet.NodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "check", Image: lab.DroverImage, Args: []string{"--no-such-flag"}}},
		}},
	})
}

// TestADrillWhoseCheckFailsReportsItsLogTail asks the hub for a drill whose check Job's process
// fails on the lab kubelet: the DRDrill ends Failed with the end of the check's log (the usage
// error drover wrote to stderr, reported by the kubelet as the container's termination message)
// in its status and in `drover drill report`, and its sandbox is torn down.
func TestADrillWhoseCheckFailsReportsItsLogTail(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, GenerateName: "db-"},
		Spec: v1alpha1.DRDrillSpec{DRPCName: "db", Check: failingCheck(), KeepFor: &metav1.Duration{}}}
	g.Expect(p.env.Hub.Create(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(p.env.Hub.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.Phase).To(Or(Equal(v1alpha1.DrillFailed), Equal(v1alpha1.DrillPassed), Equal(v1alpha1.DrillAborted), Equal(v1alpha1.DrillRefused)),
			"the drill ends; it is %s at step %d", d.Status.Phase, len(d.Status.Steps))
	}).Should(Succeed())
	g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillFailed), "Accepted: %+v", d.Status.Conditions)
	g.Expect(d.Status.Check).NotTo(BeNil())
	g.Expect(d.Status.Check.Result).To(Equal(v1alpha1.DrillResultFailed))
	t.Logf("DRDrill %s: check %s: %s\nlog tail:\n%s", d.Name, d.Status.Check.Result, d.Status.Check.Message, d.Status.Check.LogTail)
	g.Expect(d.Status.Check.LogTail).To(MatchRegexp(`^From container check of pod %s-\w+ \(exit code [1-9]\d*\):\n`, drill.CheckJob))
	g.Expect(d.Status.Check.LogTail).To(ContainSubstring("unknown flag: --no-such-flag"), "the end of the check's log")

	var report strings.Builder
	g.Expect(clidrill.Report(ctx, p.env.Hub, &report, clidrill.ReportOptions{Namespace: p.ns, App: "db", Drill: d.Name})).To(Succeed())
	g.Expect(report.String()).To(ContainSubstring("unknown flag: --no-such-flag"), "the report prints the log tail:\n%s", report.String())

	g.Expect(d.Status.Namespaces).To(HaveLen(1))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(p.west.Get(ctx, client.ObjectKey{Name: d.Status.Namespaces[0].Sandbox}, &corev1.Namespace{}))
	}).Should(BeTrue(), "the failed drill's sandbox is torn down")
}
