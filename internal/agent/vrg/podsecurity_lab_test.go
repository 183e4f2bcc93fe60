package vrg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
)

// editorClient is a client of a lab cluster as user, bound to Kubernetes' edit ClusterRole in
// namespace ns alone: an editor of the application, as its team has.
func editorClient(t *testing.T, g Gomega, admin client.Client, cluster, ns, user string) client.Client {
	ctx := context.Background()
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
	c, err := vrglab.Lab().Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := c.Kubeconfig(user, nil)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	g.Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// rootDeployment is a Deployment whose pod is root on its node: privileged, in the node's PID
// namespace, with the node's / mounted.
func rootDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "root"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostPID:    true,
					Volumes:    []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
					Containers: []corev1.Container{{Name: "root", Image: "example.com/lab/podprobe", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
				},
			},
		},
	}
}

// privilegedPods lists the pods of a namespace that are privileged or in their node's PID
// namespace.
func privilegedPods(g Gomega, cl client.Client, ns string) []string {
	pods := &corev1.PodList{}
	g.Expect(cl.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, p := range pods.Items {
		if p.Spec.HostPID || (len(p.Spec.Containers) > 0 && p.Spec.Containers[0].SecurityContext != nil && ptr.Deref(p.Spec.Containers[0].SecurityContext.Privileged, false)) {
			out = append(out, p.Name)
		}
	}
	return out
}

// TestAnEditorsPrivilegedDeploymentDoesNotRunOnThePeerAfterAFailover: on east the application's
// namespace enforces Pod Security baseline, so an editor of it gets a privileged Deployment
// created (the API server judges pods, not their templates) but none of its pods. The capture
// takes the Deployment to the stores. When the application fails over to west, west's namespace
// enforces the same level, the restore refuses the Deployment, naming it in KubeObjectsReady,
// restores the rest, and no privileged pod runs on west.
func TestAnEditorsPrivilegedDeploymentDoesNotRunOnThePeerAfterAFailover(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	const ns = "psa-editor"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}})).To(Succeed())
	editor := editorClient(t, g, east, lab.East, ns, "dave")
	g.Expect(editor.Create(ctx, rootDeployment(ns))).To(Succeed(), "the API server admits the Deployment itself")
	g.Expect(editor.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conf"}, Data: map[string]string{"k": "v"}})).To(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(privilegedPods(g, east, ns)).To(BeEmpty()) }).WithTimeout(3*time.Second).Should(Succeed(),
		"east's namespace refuses the Deployment's pods")

	profiles, _ := vrglab.S3Profiles(g)
	eastGroup := vrglab.PrimaryVRG(ns, "app", "none", "3s", profiles)
	eastGroup.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed(), "east captures the objects, the Deployment included")

	// The application moves to west: east's group demoted first (it removes the workloads there),
	// then west's promoted by a failover.
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	westGroup := vrglab.PrimaryVRG(ns, "app", "none", "3s", profiles)
	westGroup.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	westGroup.Spec.Action = v1alpha1.ActionFailover
	g.Expect(west.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	var ko metav1.Condition
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		ko = vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Reason).NotTo(Or(Equal(v1alpha1.ReasonProgressing), Equal("Unknown"), BeEmpty()), ko.Message)
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "conf"}, &corev1.ConfigMap{})).To(Succeed(), "the ConfigMap is restored")
	}).Should(Succeed(), "west restores the capture")
	t.Logf("west's KubeObjectsReady: %s %s: %s", ko.Status, ko.Reason, ko.Message)
	wns := &corev1.Namespace{}
	g.Expect(west.Get(ctx, client.ObjectKey{Name: ns}, wns)).To(Succeed())
	t.Logf("west's namespace labels: %v", wns.Labels)
	// Had the Deployment been restored, its ReplicaSet's pods come within seconds.
	time.Sleep(5 * time.Second)
	err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "root"}, &appsv1.Deployment{})
	root := privilegedPods(g, west, ns)
	t.Logf("west's Deployment root: %v; privileged pods on west: %v", err, root)

	g.Expect(root).To(BeEmpty(), "no privileged pod runs on west")
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment is not restored: %v", err)
	g.Expect(wns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"), "west's namespace enforces east's level")
	g.Expect(ko.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ko.Reason).To(Equal("PodSecurityRefused"))
	g.Expect(ko.Message).To(ContainSubstring(fmt.Sprintf("Deployment.apps %s/root", ns)))
	g.Expect(ko.Message).To(ContainSubstring(`violates PodSecurity "baseline:latest"`))
}
