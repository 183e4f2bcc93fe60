package vrg_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/tenancy"
)

// shellJob is a Job hook's template: one pod on the lab kubelet running script, never retried.
func shellJob(script string) *batchv1.JobSpec {
	spec := &batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "migrate", Image: "example.com/lab/shell", Command: []string{"sh", "-c", script}}},
	}}}
	vrglab.OnKubelet(&spec.Template.Spec)
	return spec
}

// The hook runner, with the cluster's API server and a lab kubelet: a Job hook creates its Job
// once per attempt (a second run of the same attempt finds it) and reports a failed pod's log
// end; a scale hook scales a Deployment to zero (its pod gone) and back (Ready); a check waits
// for a condition or a CEL expression and fails past its timeout saying what it last saw; a
// hook naming a namespace the group does not protect is refused.
func TestTheHookRunnerRunsJobsScalesAndChecks(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(45 * time.Second)
	ctx := t.Context()
	const ns = "hooks-kinds"
	east := vrglab.ClusterClient(t, lab.East)
	c, err := vrglab.Lab().Cluster(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	vrglab.StartKubelet(t, g)
	g.Expect(east.Create(ctx, hooksNamespace(ns))).To(Succeed())
	g.Expect(east.Create(ctx, processDeployment(ns))).To(Succeed())
	runner := &hooks.Runner{Client: east, Reader: east, Config: cfg}
	protected := []string{ns}
	id := hooks.ID{Recipe: "db", Action: "a1", Attempt: 1}
	timeout := &metav1.Duration{Duration: 40 * time.Second}

	migrate := &v1alpha1.Hook{Name: "migrate", Point: v1alpha1.HookAfterRestore, Timeout: timeout,
		Job: &v1alpha1.JobHook{Namespace: ns, Template: shellJob("echo migrated")}}
	for range 2 {
		o := runner.Run(ctx, migrate, id, protected)
		g.Expect(o.Succeeded).To(BeTrue(), o.Message)
		g.Expect(o.Message).To(ContainSubstring("Job hooks-kinds/" + hooks.JobName("db", "migrate", "a1", 1) + " completed"))
	}
	jobs := &batchv1.JobList{}
	g.Expect(east.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{hooks.LabelHook: "migrate"})).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1), "a second run of one attempt finds the attempt's Job")

	broken := &v1alpha1.Hook{Name: "broken", Point: v1alpha1.HookAfterRestore, Timeout: timeout,
		Job: &v1alpha1.JobHook{Namespace: ns, Template: shellJob(`echo "relation users does not exist" >&2; exit 2`)}}
	o := runner.Run(ctx, broken, id, protected)
	g.Expect(o.Succeeded).To(BeFalse())
	g.Expect(o.Message).To(ContainSubstring("failed"))
	g.Expect(o.Output).To(ContainSubstring("exit code 2"))
	g.Expect(o.Output).To(ContainSubstring("relation users does not exist"))

	for _, n := range []int32{0, 1} {
		scale := &v1alpha1.Hook{Name: "scale", Point: v1alpha1.HookBeforeStop, Timeout: timeout,
			Scale: &v1alpha1.ScaleHook{Kind: v1alpha1.ScaleDeployment, Namespace: ns, Name: "db", Replicas: ptr.To(n)}}
		o := runner.Run(ctx, scale, id, protected)
		g.Expect(o.Succeeded).To(BeTrue(), "scale to %d: %s", n, o.Message)
		pods := &corev1.PodList{}
		g.Expect(east.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "db"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(int(n)), "scaled to %d", n)
	}

	deployment := v1alpha1.CheckObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "db"}
	for _, check := range []*v1alpha1.CheckHook{
		{Object: deployment, Condition: &v1alpha1.CheckCondition{Type: "Available"}},
		{Object: deployment, Expression: "self.status.readyReplicas == self.spec.replicas"},
	} {
		o := runner.Run(ctx, &v1alpha1.Hook{Name: "ready", Point: v1alpha1.HookAfterReady, Timeout: timeout, Check: check}, id, protected)
		g.Expect(o.Succeeded).To(BeTrue(), o.Message)
	}
	never := &v1alpha1.Hook{Name: "never", Point: v1alpha1.HookAfterReady, Timeout: &metav1.Duration{Duration: 5 * time.Second},
		Check: &v1alpha1.CheckHook{Object: deployment, Expression: "self.status.readyReplicas == 5"}}
	o = runner.Run(ctx, never, id, protected)
	g.Expect(o.Succeeded).To(BeFalse())
	g.Expect(o.Message).To(And(ContainSubstring("timed out after 5s"), ContainSubstring("self.status.readyReplicas == 5 is false")))

	elsewhere := &v1alpha1.Hook{Name: "elsewhere", Point: v1alpha1.HookAfterRestore, Timeout: timeout,
		Job: &v1alpha1.JobHook{Namespace: "default", Template: shellJob("echo escaped")}}
	o = runner.Run(ctx, elsewhere, id, protected)
	g.Expect(o.Succeeded).To(BeFalse())
	g.Expect(o.Message).To(ContainSubstring("namespace default, which this group does not protect"))
	g.Expect(east.List(ctx, jobs, client.InNamespace("default"), client.MatchingLabels{hooks.LabelHook: "elsewhere"})).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "a refused hook creates nothing")

	// A protected namespace whose administrator has not allowed hooks: the recipe came through
	// the hub, whose credential may not allow them.
	const closed = "hooks-kinds-closed"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: closed}})).To(Succeed())
	shut := &v1alpha1.Hook{Name: "shut", Point: v1alpha1.HookAfterRestore, Timeout: timeout,
		Job: &v1alpha1.JobHook{Namespace: closed, Template: shellJob("echo ran")}}
	o = runner.Run(ctx, shut, id, []string{ns, closed})
	g.Expect(o.Succeeded).To(BeFalse())
	g.Expect(o.Message).To(ContainSubstring("namespace hooks-kinds-closed does not allow drover's hooks on this cluster: its administrator allows them with `kubectl label namespace hooks-kinds-closed drover.io/hooks=enabled`"))
	g.Expect(east.List(ctx, jobs, client.InNamespace(closed))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "a hook in a namespace that does not allow hooks creates nothing")
}

// hooksNamespace is a namespace whose administrator lets drover run hooks in it.
func hooksNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tenancy.LabelHooks: tenancy.HooksEnabled}}}
}
