package config_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// drillTenantClient is tenantClient with DRDrill rights too: an application team allowed every
// verb on DRPlacementControls and DRDrills in namespace ns, and nothing else.
func drillTenantClient(ctx context.Context, g Gomega, user, ns string) client.Client {
	c := tenantClient(ctx, g, user, ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drdrill-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"drdrills"}, Verbs: []string{rbacv1.VerbAll},
	}}}
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, role))).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-drills"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, binding))).To(Succeed())
	return c
}

// restrictedCheck is a check Job that the restricted Pod Security Standard admits.
func restrictedCheck() *batchv1.JobSpec {
	return &batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](1),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "check", Image: "example.com/check", Command: []string{"check"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}},
	}
}

// refusedWithin calls create until the API server refuses it (Forbidden or Invalid), for up to
// d: it compiles a policy just applied within a second or so. It returns the last error, nil
// when every call was accepted.
func refusedWithin(d time.Duration, create func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := create()
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// privileged makes a container privileged (which may not also forbid privilege escalation).
func privileged(c *corev1.Container) {
	c.SecurityContext.Privileged, c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true), nil
}

func tenantDrill(ns string, change func(*v1alpha1.DRDrillSpec)) *v1alpha1.DRDrill {
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "db-"},
		Spec: v1alpha1.DRDrillSpec{DRPCName: "db", Check: restrictedCheck()}}
	change(&d.Spec)
	return d
}

// TestATenantWithDrillRightsGetsNoPrivilegedPodNorUnboundedDrill applies the hub's release
// manifests and acts as a tenant allowed every verb on DRPlacementControls and DRDrills in
// drill-team and nothing else: the API server refuses a DRDrill whose check would run a pod on
// its node's namespaces or files (privileged, hostPID, hostNetwork, hostIPC, hostPath, an added
// capability), more pods, retries or time than a check is allowed, a keepFor or timeout past a
// day, and a DRPlacementControl with an unbounded pvcSelector; the tenant cannot lower its
// drills' Pod Security level, which only an administrator sets on the namespace.
func TestATenantWithDrillRightsGetsNoPrivilegedPodNorUnboundedDrill(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	kubectlApply(t, g, build(g, "hub"))
	const ns = "drill-team"
	tenant := drillTenantClient(ctx, g, "carol", ns)
	podSpec := func(change func(*corev1.PodSpec)) func(*v1alpha1.DRDrillSpec) {
		return func(s *v1alpha1.DRDrillSpec) { change(&s.Check.Template.Spec) }
	}
	hostRoot := corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}
	refused := []struct {
		name   string
		change func(*v1alpha1.DRDrillSpec)
	}{
		{"a privileged check", podSpec(func(p *corev1.PodSpec) { privileged(&p.Containers[0]) })},
		{"a check in the node's PID namespace", podSpec(func(p *corev1.PodSpec) { p.HostPID = true })},
		{"a check on the node's network", podSpec(func(p *corev1.PodSpec) { p.HostNetwork = true })},
		{"a check in the node's IPC namespace", podSpec(func(p *corev1.PodSpec) { p.HostIPC = true })},
		{"a check mounting the node's / (hostPath)", podSpec(func(p *corev1.PodSpec) { p.Volumes = []corev1.Volume{hostRoot} })},
		{"a privileged init container", podSpec(func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "init", Image: "example.com/init", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
		})},
		{"a check adding SYS_ADMIN", podSpec(func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		})},
		{"a check of 100 pods at once", func(s *v1alpha1.DRDrillSpec) { s.Check.Parallelism = ptr.To[int32](100) }},
		{"a check of 1000 completions", func(s *v1alpha1.DRDrillSpec) { s.Check.Completions = ptr.To[int32](1000) }},
		{"a check retried 1000 times", func(s *v1alpha1.DRDrillSpec) { s.Check.BackoffLimit = ptr.To[int32](1000) }},
		{"a check running for a year", func(s *v1alpha1.DRDrillSpec) { s.Check.ActiveDeadlineSeconds = ptr.To[int64](365 * 24 * 3600) }},
		{"a sandbox kept for 48 hours", func(s *v1alpha1.DRDrillSpec) { s.KeepFor = &metav1.Duration{Duration: 48 * time.Hour} }},
		{"a drill timing out after 100 hours", func(s *v1alpha1.DRDrillSpec) { s.Timeout = &metav1.Duration{Duration: 100 * time.Hour} }},
		{"a drill timing out at once", func(s *v1alpha1.DRDrillSpec) { s.Timeout = &metav1.Duration{Duration: time.Second} }},
	}
	var accepted []string
	for _, tc := range refused {
		err := refusedWithin(5*time.Second, func() error { return tenant.Create(ctx, tenantDrill(ns, tc.change), client.DryRunAll) })
		if err == nil {
			accepted = append(accepted, tc.name)
			t.Logf("%s: ACCEPTED", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}

	selector := metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := range 1000 {
		selector.MatchLabels[fmt.Sprintf("k%d", i)] = "v"
	}
	err := tenant.Create(ctx, tenancyDRPC(ns, "huge", func(s *v1alpha1.DRPlacementControlSpec) { s.PVCSelector = selector }), client.DryRunAll)
	if err == nil {
		accepted = append(accepted, "a pvcSelector of 1000 labels")
		t.Logf("a pvcSelector of 1000 labels: ACCEPTED")
	} else {
		t.Logf("a pvcSelector of 1000 labels: %v", err)
	}

	// The level of its drills' sandboxes is the namespace's label, which the tenant cannot set.
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "carol"}
	person, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	err = person.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"drover.io/drill-pod-security":"baseline"}}}`)))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the tenant labelled its namespace: %v", err)

	g.Expect(accepted).To(BeEmpty(), "the API server accepted from the tenant: %s", strings.Join(accepted, "; "))
	g.Expect(tenant.Create(ctx, tenantDrill(ns, func(s *v1alpha1.DRDrillSpec) {
		s.KeepFor, s.Timeout = &metav1.Duration{Duration: time.Hour}, &metav1.Duration{Duration: 2 * time.Hour}
		s.Check.Parallelism, s.Check.Completions = ptr.To[int32](2), ptr.To[int32](2)
	}), client.DryRunAll)).To(Succeed(), "a restricted check, kept an hour")
}
