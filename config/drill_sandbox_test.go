package config_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestADrillSandboxRunsNoPrivilegedPodWhoeverCreatesIt applies the agent's release manifests
// and, in a namespace labelled as a drill's sandbox, acts as the agent's ServiceAccount (which
// creates the check Job) and as kube-controller-manager (whose Job controller creates the check's
// pods, so the agent's own policy never sees them): the shipped ValidatingAdmissionPolicy
// drover-drill-sandbox refuses a check Job or a pod that would run on its node's namespaces or
// files, and a check Job past its bounds, whatever the namespace's Pod Security labels say (this
// sandbox has none: the policy holds where Pod Security is not enforced).
func TestADrillSandboxRunsNoPrivilegedPodWhoeverCreatesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	kubectlApply(t, g, build(g, "agent"))
	const ns = "drilled-drill-0a1b2c3d"
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"drover.io/drill": "0a1b2c3d"}}}))).To(Succeed())
	as := func(user string, groups ...string) client.Client {
		cfg := rest.CopyConfig(adminConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	agent := as(agentUser, "system:serviceaccounts", "system:serviceaccounts:drover-system", "system:authenticated")
	// kube-controller-manager as the lab runs it (its own user); system:masters stands for the
	// controller roles it holds: RBAC lets everything through, admission still applies.
	jobController := as("system:kube-controller-manager", "system:masters", "system:authenticated")

	job := func(change func(*batchv1.JobSpec)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drover-drill-check"}, Spec: *restrictedCheck()}
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1800)
		change(&j.Spec)
		return j
	}
	pod := func(change func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "drover-drill-check-"}, Spec: restrictedCheck().Template.Spec}
		change(&p.Spec)
		return p
	}
	hostRoot := corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}
	refused := []struct {
		name string
		do   func() error
	}{
		{"the agent's check Job in the node's PID namespace", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) { s.Template.Spec.HostPID = true }), client.DryRunAll)
		}},
		{"the agent's check Job mounting the node's /", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) { s.Template.Spec.Volumes = []corev1.Volume{hostRoot} }), client.DryRunAll)
		}},
		{"the agent's privileged check Job", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) {
				privileged(&s.Template.Spec.Containers[0])
			}), client.DryRunAll)
		}},
		{"the agent's check Job of 100 pods at once", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) { s.Parallelism = ptr.To[int32](100) }), client.DryRunAll)
		}},
		{"the agent's check Job of 1000 completions", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) { s.Completions = ptr.To[int32](1000) }), client.DryRunAll)
		}},
		{"the agent's check Job without a deadline", func() error {
			return agent.Create(ctx, job(func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = nil }), client.DryRunAll)
		}},
		{"the Job controller's pod on the node's network", func() error {
			return jobController.Create(ctx, pod(func(p *corev1.PodSpec) { p.HostNetwork = true }), client.DryRunAll)
		}},
		{"the Job controller's privileged pod", func() error {
			return jobController.Create(ctx, pod(func(p *corev1.PodSpec) { privileged(&p.Containers[0]) }), client.DryRunAll)
		}},
		{"the Job controller's pod mounting the node's /", func() error {
			return jobController.Create(ctx, pod(func(p *corev1.PodSpec) { p.Volumes = []corev1.Volume{hostRoot} }), client.DryRunAll)
		}},
	}
	var accepted []string
	for _, r := range refused {
		err := refusedWithin(5*time.Second, r.do)
		if err == nil {
			accepted = append(accepted, r.name)
			t.Logf("%s: ACCEPTED", r.name)
			continue
		}
		t.Logf("%s: %v", r.name, err)
	}
	g.Expect(accepted).To(BeEmpty(), "accepted in a drill's sandbox: %s", strings.Join(accepted, "; "))

	g.Expect(agent.Create(ctx, job(func(*batchv1.JobSpec) {}), client.DryRunAll)).To(Succeed(), "the agent's bounded check Job")
	g.Expect(jobController.Create(ctx, pod(func(*corev1.PodSpec) {}), client.DryRunAll)).To(Succeed(), "the Job controller's pod of it")
	privileged := pod(func(p *corev1.PodSpec) { privileged(&p.Containers[0]) })
	privileged.Namespace = "drilled"
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drilled"}}))).To(Succeed())
	g.Expect(jobController.Create(ctx, privileged, client.DryRunAll)).To(Succeed(), "outside a sandbox the policy does not apply")
}
