package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	"github.com/drover-io/drover/internal/lab"
)

const (
	// fenceTimeout bounds the wait for the API server to see a namespace label or the
	// configuration (its informers) and for the fence server to come up.
	fenceTimeout = 15 * time.Second
	fencePolling = 100 * time.Millisecond
)

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func pvc(ns, name, protectedBy string) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(lab.BlockStorageClass),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
	if protectedBy != "" {
		p.Labels = map[string]string{webhook.LabelProtectedBy: protectedBy}
	}
	return p
}

func vrg(ns, name string) *v1alpha1.VolumeReplicationGroup {
	return &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStatePrimary,
			PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			S3Profiles: []v1alpha1.S3Profile{{
				Name: "s3-east", Endpoint: "http://127.0.0.1:9000", Insecure: true, Bucket: "drover",
				SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3-east"},
			}},
			SchedulingInterval:   "1m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
		},
	}
}

// pod builds a pod that mounts claim; the lab's fake nodes never run anything.
func pod(ns, name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "lab/idle",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
}

// fenceServer runs the fence on 127.0.0.1 in the test process, as the agent will.
type fenceServer struct {
	srv     *webhook.Server
	stop    context.CancelFunc
	stopped chan error
}

func startFence(g Gomega, address string, certs *webhook.SelfSigned, reader client.Reader) *fenceServer {
	srv, err := webhook.NewServer(webhook.ServerOptions{
		Address: address, GetCertificate: certs.GetCertificate, Fences: webhook.ClusterFences{Reader: reader},
	})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	f := &fenceServer{srv: srv, stop: cancel, stopped: make(chan error, 1)}
	go func() { f.stopped <- srv.Start(ctx) }()
	return f
}

func (f *fenceServer) Stop(g Gomega) {
	f.stop()
	g.Expect(<-f.stopped).To(Succeed())
}

// TestFence follows a relocation's fence on east, step by step against the real API server:
// each step depends on the one before, so the first failure ends the test.
func TestFence(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	cl, err := testLab.Client("east", v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())

	certs, err := webhook.NewSelfSigned("127.0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	fence := startFence(g, "127.0.0.1:0", certs, cl)
	address := fence.srv.Addr()
	t.Cleanup(func() { fence.stop() })

	const app, other, group, data, scratch = "fence-app", "fence-other", "db", "data-db-0", "scratch"
	for _, obj := range []client.Object{
		namespace(app), namespace(other), vrg(app, group),
		pvc(app, data, group), pvc(app, scratch, ""), pvc(other, data, ""),
	} {
		g.Expect(cl.Create(ctx, obj)).To(Succeed())
	}
	step := func(name string, f func(g Gomega)) {
		if !t.Run(name, func(t *testing.T) { f(NewWithT(t)) }) {
			t.FailNow()
		}
	}
	podNumber := 0
	createPod := func(ns, claim string) error {
		podNumber++
		return cl.Create(ctx, pod(ns, fmt.Sprintf("pod-%d", podNumber), claim))
	}

	step("the configuration is installed as specified, and applying it again changes nothing", func(g Gomega) {
		opts := webhook.Options{URL: fence.srv.URL(), CABundle: certs.CABundle}
		g.Expect(webhook.EnsureConfiguration(ctx, cl, opts)).To(Succeed())
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: webhook.ConfigurationName}, cfg)).To(Succeed())
		g.Expect(cfg.Webhooks).To(HaveLen(1))
		hook := cfg.Webhooks[0]
		g.Expect(hook.Name).To(Equal(webhook.WebhookName))
		g.Expect(hook.ClientConfig.URL).To(Equal(ptr.To("https://" + address + webhook.Path)))
		g.Expect(hook.ClientConfig.CABundle).To(Equal(certs.CABundle))
		g.Expect(hook.Rules).To(Equal([]admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
				Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}}))
		g.Expect(hook.NamespaceSelector).To(Equal(&metav1.LabelSelector{
			MatchLabels: map[string]string{webhook.LabelFenced: "true"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName,
				Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kube-public", "kube-node-lease", "drover-system"}}},
		}))
		g.Expect(hook.FailurePolicy).To(Equal(ptr.To(admissionregistrationv1.Fail)))
		g.Expect(hook.SideEffects).To(Equal(ptr.To(admissionregistrationv1.SideEffectClassNone)))
		g.Expect(hook.AdmissionReviewVersions).To(Equal([]string{"v1"}))
		g.Expect(hook.TimeoutSeconds).To(Equal(ptr.To[int32](5)))

		g.Expect(webhook.EnsureConfiguration(ctx, cl, opts)).To(Succeed())
		again := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: webhook.ConfigurationName}, again)).To(Succeed())
		g.Expect(again.ResourceVersion).To(Equal(cfg.ResourceVersion))
	})

	step("a pod mounting the protected PVC is admitted while the namespace is not fenced", func(g Gomega) {
		g.Expect(createPod(app, data)).To(Succeed())
	})

	step("once the namespace is fenced and the group is demoting, the API server refuses a pod that mounts its PVC", func(g Gomega) {
		_, _, err = webhook.SetNamespaceFence(ctx, cl, app, true)
		g.Expect(err).NotTo(HaveOccurred())
		demoting := vrg(app, group)
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(demoting), demoting)).To(Succeed())
		base := demoting.DeepCopy()
		demoting.Annotations = map[string]string{webhook.AnnotationFence: webhook.FenceRelocate}
		g.Expect(cl.Patch(ctx, demoting, client.MergeFrom(base))).To(Succeed())

		// The API server sees the label through its informers; the probe says when it does.
		g.Eventually(func() (bool, error) { return webhook.ProbeFence(ctx, cl, app, data) }).
			WithTimeout(fenceTimeout).WithPolling(fencePolling).Should(BeTrue())
		began := time.Now()
		err := createPod(app, data)
		t.Logf("The API server refused the fenced pod in %s", time.Since(began))
		g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring(
			"VolumeReplicationGroup fence-app/db is being demoted for a relocation; pods may not mount its PVC data-db-0 " +
				"until the application runs again on this cluster")))
	})

	step("a pod mounting an unprotected PVC in the fenced namespace is admitted", func(g Gomega) {
		g.Expect(createPod(app, scratch)).To(Succeed())
	})

	step("once the group is secondary, the refusal says so", func(g Gomega) {
		secondary := vrg(app, group)
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(secondary), secondary)).To(Succeed())
		base := secondary.DeepCopy()
		secondary.Annotations = nil
		secondary.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
		secondary.Spec.Action = v1alpha1.ActionRelocate
		g.Expect(cl.Patch(ctx, secondary, client.MergeFrom(base))).To(Succeed())
		err := createPod(app, data)
		g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("VolumeReplicationGroup fence-app/db is secondary on this cluster, so its PVC data-db-0")))
	})

	step("a PVC whose protected-by label an editor removed stays fenced by its group's status", func(g Gomega) {
		claim := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: app, Name: data}, claim)).To(Succeed())
		base := claim.DeepCopy()
		delete(claim.Labels, webhook.LabelProtectedBy)
		g.Expect(cl.Patch(ctx, claim, client.MergeFrom(base))).To(Succeed())
		group := vrg(app, group)
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), group)).To(Succeed())
		before := group.DeepCopy()
		group.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: app, Name: data}}
		g.Expect(cl.Status().Patch(ctx, group, client.MergeFrom(before))).To(Succeed())
		err := createPod(app, data)
		g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "the label is gone and the pod was admitted: %v", err)
		g.Expect(err).To(MatchError(ContainSubstring("VolumeReplicationGroup fence-app/db is secondary on this cluster, so its PVC data-db-0")))
	})

	step("a pod whose ephemeral volume names a fenced PVC is refused", func(g Gomega) {
		// The ephemeral-volume controller names a pod's PVC <pod>-<volume>.
		g.Expect(cl.Create(ctx, pvc(app, "eph-0-scratch", group))).To(Succeed())
		p := pod(app, "eph-0", "")
		p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: pvc(app, "", "").Spec},
		}}
		p.Spec.Volumes[0].Name = "scratch"
		p.Spec.Containers[0].VolumeMounts[0].Name = "scratch"
		err := cl.Create(ctx, p)
		g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("its PVC eph-0-scratch")))
	})

	step("with the fence stopped, a pod in an unfenced namespace is still admitted", func(g Gomega) {
		fence.Stop(g)
		g.Expect(createPod(other, data)).To(Succeed())
	})

	step("with the fence stopped, a system namespace labelled fenced by mistake is not called: its pods are admitted", func(g Gomega) {
		_, _, err := webhook.SetNamespaceFence(ctx, cl, "kube-public", true)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _, _, _ = webhook.SetNamespaceFence(ctx, cl, "kube-public", false) }()
		g.Expect(createPod("kube-public", data)).To(Succeed())
	})

	step("with the fence stopped, the fenced namespace fails closed: even a pod of an unprotected PVC is refused", func(g Gomega) {
		for _, claim := range []string{data, scratch} {
			err := createPod(app, claim)
			g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("failed calling webhook %q", webhook.WebhookName))))
			g.Expect(webhook.IsFenceDenial(err)).To(BeFalse())
		}
	})

	step("the fence started again on the same address refuses the fenced PVC again", func(g Gomega) {
		fence = startFence(g, address, certs, cl)
		g.Eventually(func() (bool, error) { return webhook.ProbeFence(ctx, cl, app, data) }).
			WithTimeout(fenceTimeout).WithPolling(fencePolling).Should(BeTrue())
		g.Expect(createPod(app, scratch)).To(Succeed())
		fence.Stop(g)
	})

	step("once the namespace is unfenced, its pods are admitted again, even with the fence stopped", func(g Gomega) {
		_, _, err = webhook.SetNamespaceFence(ctx, cl, app, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func() (bool, error) { return webhook.ProbeFence(ctx, cl, app, data) }).
			WithTimeout(fenceTimeout).WithPolling(fencePolling).Should(BeFalse())
		g.Expect(createPod(app, data)).To(Succeed())
	})

	step("setting a namespace's fence to what it already is writes nothing", func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: app}, ns)).To(Succeed())
		g.Expect(ns.Labels).NotTo(HaveKey(webhook.LabelFenced))
		_, changed, err := webhook.SetNamespaceFence(ctx, cl, app, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(changed).To(BeFalse(), "nothing changed")
		again := &corev1.Namespace{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: app}, again)).To(Succeed())
		g.Expect(again.ResourceVersion).To(Equal(ns.ResourceVersion))
	})
}
