package drill_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/drill"
	"github.com/drover-io/drover/internal/lab"
)

// hubCredential is a client of a managed cluster with the hub's credential there: the
// kubeconfig that joining the cluster stored in its Secret on the hub.
func hubCredential(g Gomega, p *protected, cluster string) client.Client {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(cluster)}
	g.Expect(p.env.Hub.Get(context.Background(), key, secret)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[v1alpha1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// rootCheck is a check Job whose pod would be root on its node: privileged, in the node's PID
// namespace and network, with the node's / mounted.
func rootCheck() *batchv1.JobSpec {
	return &batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			HostPID:       true, HostNetwork: true,
			Volumes: []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			Containers: []corev1.Container{{Name: "check", Image: "lab/check", Command: []string{"check"},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}}},
		}},
	}
}

// rootPods lists the pods of a namespace that run on their node's namespaces or files.
func rootPods(g Gomega, cl client.Client, ns string) []string {
	pods := &corev1.PodList{}
	g.Expect(cl.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if p.Spec.HostPID || p.Spec.HostNetwork || (c.SecurityContext != nil && ptr.Deref(c.SecurityContext.Privileged, false)) {
				out = append(out, fmt.Sprintf("pod %s (hostPID %t, hostNetwork %t, container %s privileged)", p.Name, p.Spec.HostPID, p.Spec.HostNetwork, c.Name))
			}
		}
	}
	return out
}

// TestTheHubsCredentialGetsNoRootOnThePeerThroughADrill acts on west with the hub's credential
// there, as whoever stole it would: a DrillSandbox whose check is a pod with the node's root
// never gets that pod (the sandbox fails at its check, naming why), and the sandbox it builds
// enforces Pod Security restricted, is under a quota before anything runs there, and may reach
// only the cluster's DNS outside itself.
func TestTheHubsCredentialGetsNoRootOnThePeerThroughADrill(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	hub := hubCredential(g, p, lab.West)

	sb := &v1alpha1.DrillSandbox{ObjectMeta: metav1.ObjectMeta{Namespace: p.group.Namespace, Name: "drill-rootchk"},
		Spec: v1alpha1.DrillSandboxSpec{VRGName: p.group.Name, DrillID: "rootchk", Check: rootCheck()}}
	g.Expect(hub.Create(ctx, sb)).To(Succeed())
	got := p.awaitResult(t, g, sb)
	sandboxNS := drill.SandboxNamespace(p.ns, "rootchk")
	// Whatever the agent decided, the Job controller had time to create the check's pods.
	time.Sleep(5 * time.Second)
	root := rootPods(g, p.west, sandboxNS)
	t.Logf("pods with the node's root in the sandbox: %v", root)
	ns := &corev1.Namespace{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Name: sandboxNS}, ns)).To(Succeed())
	t.Logf("sandbox namespace labels: %v", ns.Labels)
	quotas := &corev1.ResourceQuotaList{}
	g.Expect(p.west.List(ctx, quotas, client.InNamespace(sandboxNS))).To(Succeed())
	t.Logf("sandbox quotas: %d", len(quotas.Items))
	np := &networkingv1.NetworkPolicy{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: sandboxNS, Name: drill.IsolationPolicy}, np)).To(Succeed())
	t.Logf("sandbox egress: %+v", np.Spec.Egress)

	g.Expect(root).To(BeEmpty(), "no pod of the sandbox has its node's root")
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultFailed), "the sandbox fails: %s", got.Status.Message)
	g.Expect(got.Status.Message).To(And(ContainSubstring("privileged"), ContainSubstring("host namespaces (hostNetwork=true, hostPID=true)"), ContainSubstring(`"hostPath"`)))
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	g.Expect(quotas.Items).To(HaveLen(1), "the sandbox is under a quota")
	g.Expect(quotas.Items[0].Status.Hard).To(HaveKey(corev1.ResourcePods), "the quota is in force")
	for _, rule := range np.Spec.Egress {
		g.Expect(rule.To).NotTo(BeEmpty(), "every egress rule names its peers: none allows any address (%+v)", rule)
		for _, to := range rule.To {
			g.Expect(to.IPBlock).To(BeNil())
			g.Expect(to.NamespaceSelector).NotTo(BeNil())
			if to.PodSelector != nil {
				g.Expect(to.NamespaceSelector.MatchLabels).To(Equal(map[string]string{corev1.LabelMetadataName: "kube-system"}), "DNS only from the cluster's DNS")
			}
		}
	}
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "rootchk")
}

// TestTheHubsCredentialCannotDrillAnotherNamespacesApplication acts on west with the hub's
// credential there: it makes, in a namespace of its own, a group protecting the drilled
// application's namespace (the agent's group reconciler refuses it, but a drill used to copy
// whatever group it named), and a DrillSandbox naming it. The sandbox fails, naming the rule,
// and copies none of the application's volumes.
func TestTheHubsCredentialCannotDrillAnotherNamespacesApplication(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	hub := hubCredential(g, p, lab.West)
	const other = "drill-thief"
	g.Expect(client.IgnoreAlreadyExists(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}))).To(Succeed())
	thief := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "thief"}, Spec: *p.group.Spec.DeepCopy()}
	thief.Spec.ProtectedNamespaces = []string{p.ns}
	g.Expect(hub.Create(ctx, thief)).To(Succeed())
	stolen := &v1alpha1.DrillSandbox{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "drill-thief"},
		Spec: v1alpha1.DrillSandboxSpec{VRGName: thief.Name, DrillID: "thief"}}
	g.Expect(hub.Create(ctx, stolen)).To(Succeed())
	got := p.awaitResult(t, g, stolen)
	copies := &corev1.PersistentVolumeClaimList{}
	g.Expect(p.west.List(ctx, copies, client.InNamespace(drill.SandboxNamespace(p.ns, "thief")))).To(Succeed())
	t.Logf("copies of %s's volumes made for another namespace's group: %d", p.ns, len(copies.Items))
	g.Expect(copies.Items).To(BeEmpty(), "no volume of %s is copied for another namespace's group", p.ns)
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultFailed))
	g.Expect(got.Status.Message).To(ContainSubstring("not its own namespace"))
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, stolen, "thief")
}
