package lab_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/kubelet"
)

const (
	timeout = 90 * time.Second
	polling = 200 * time.Millisecond
)

func newG(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	g.SetDefaultEventuallyPollingInterval(polling)
	return g
}

func cluster(g Gomega, name string) *lab.Cluster {
	c, err := testLab.Cluster(name)
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// deploymentOf names drover's Deployment on a cluster of the lab.
func deploymentOf(name string) string {
	if name == lab.Hub {
		return lab.HubDeployment
	}
	return lab.AgentDeployment
}

// readyPod returns the one Ready pod of the cluster's drover Deployment.
func readyPod(ctx context.Context, g Gomega, name string) *corev1.Pod {
	cl := clusterClient(g, name)
	var ready *corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(cl.List(ctx, pods, client.InNamespace(lab.DroverNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": deploymentOf(name)})).To(Succeed())
		ready = nil
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(p) {
				ready = p
			}
		}
		g.Expect(ready).NotTo(BeNil(), "a Running and Ready pod of %s on %s", deploymentOf(name), name)
	}).Should(Succeed())
	return ready
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestDroverRunsFromItsReleaseManifestsOnTheLabKubeletsNode(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		cl := clusterClient(g, name)
		d := &appsv1.Deployment{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: lab.DroverNamespace, Name: deploymentOf(name)}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(HavePrefix(lab.DroverImage+":"), "the release manifest's image")
		pod := readyPod(ctx, g, name)
		g.Expect(pod.Spec.NodeName).To(Equal(kubelet.DefaultNodeName))
		g.Expect(pod.Spec.ServiceAccountName).To(Equal(deploymentOf(name)))
		ns := &corev1.Namespace{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: lab.DroverNamespace}, ns)).To(Succeed())
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		logs, err := filepath.Glob(filepath.Join(cluster(g, name).Dir(), "logs", lab.DroverNamespace+"_"+deploymentOf(name)+"-*.log"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(logs).NotTo(BeEmpty(), "drover's log is in the cluster's log directory")
	}
	agent := readyPod(ctx, g, lab.East)
	g.Expect(agent.Status.PodIP).To(Equal(cluster(g, lab.East).AgentPodIP().String()), "the agent's pinned pod IP")
	pid, _ := agentProcess(g, cluster(g, lab.East))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).To(MatchRegexp(`(?m)^Uid:\s+65532\s+65532\s`), "the agent runs as its manifest's runAsUser")
	g.Expect(string(status)).To(MatchRegexp(`(?m)^Gid:\s+65532\s+65532\s`), "and runAsGroup")
}

func TestTheAPIServerEnforcesTheFenceThroughItsService(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	readyPod(ctx, g, lab.East)
	cl := clusterClient(g, lab.East)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fence-probe", Labels: map[string]string{webhook.LabelFenced: "true"}}}
	g.Expect(cl.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = cl.Delete(context.Background(), ns) })
	open := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "open"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceOneGi}},
		},
	}
	fenced := open.DeepCopy()
	fenced.Name, fenced.Labels = "fenced", map[string]string{webhook.LabelProtectedBy: "app"}
	g.Expect(cl.Create(ctx, open)).To(Succeed())
	g.Expect(cl.Create(ctx, fenced)).To(Succeed())
	vrg := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStateSecondary,
			PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}},
			S3Profiles: []v1alpha1.S3Profile{{
				Name: lab.S3ProfileName(lab.East), Endpoint: cluster(g, lab.East).S3Endpoint(), Insecure: true, Bucket: lab.S3Bucket, Region: lab.S3Region,
				SecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: lab.S3ProfileName(lab.East)},
			}},
			SchedulingInterval:   "1m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
		},
	}
	g.Expect(cl.Create(ctx, vrg)).To(Succeed())
	// The fence answers: it admits a pod of an unprotected PVC (an unreachable fence would fail
	// closed with an error) and refuses one of the secondary group's PVC.
	g.Eventually(func() (bool, error) { return webhook.ProbeFence(ctx, cl, ns.Name, open.Name) }).Should(BeFalse())
	g.Eventually(func() (bool, error) { return webhook.ProbeFence(ctx, cl, ns.Name, fenced.Name) }).Should(BeTrue())
}

func TestTheAgentsServiceAccountIsRefusedWhatItsRBACDoesNotGrant(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	c := cluster(g, lab.East)
	admin, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(admin)
	tr, err := cs.CoreV1().ServiceAccounts(lab.DroverNamespace).CreateToken(ctx, lab.AgentDeployment, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	agent := kubernetes.NewForConfigOrDie(&rest.Config{
		Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData},
	})
	// Granted: the fence's certificate Secret in drover-system.
	_, err = agent.CoreV1().Secrets(lab.DroverNamespace).Get(ctx, "drover-fence-cert", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the agent reads its own certificate Secret")
	// Namespaces: the agent deletes a drill's sandbox namespace (labelled drover.io/drill) and
	// no other (the identity policy); not granted (config/rbac/agent): binding a ClusterRole,
	// reading nodes.
	dryRun := []string{metav1.DryRunAll}
	err = agent.CoreV1().Namespaces().Delete(ctx, lab.DroverNamespace, metav1.DeleteOptions{DryRun: dryRun})
	g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "delete drover-system: %v", err)
	app := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-identity-app"}}
	sandbox := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-identity-app-drill-x1", Labels: map[string]string{"drover.io/drill": "x1"}}}
	for _, ns := range []*corev1.Namespace{app, sandbox} {
		_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	err = agent.CoreV1().Namespaces().Delete(ctx, app.Name, metav1.DeleteOptions{DryRun: dryRun})
	g.Expect(apierrors.IsInvalid(err) && strings.Contains(err.Error(), "drover.io/drill")).To(BeTrue(), "delete an application's namespace: %v", err)
	err = agent.CoreV1().Namespaces().Delete(ctx, sandbox.Name, metav1.DeleteOptions{DryRun: dryRun})
	g.Expect(err).NotTo(HaveOccurred(), "delete a drill's sandbox namespace")
	_, err = agent.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-escalates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: lab.DroverNamespace, Name: lab.AgentDeployment}},
	}, metav1.CreateOptions{DryRun: dryRun})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "bind cluster-admin: %v", err)
	_, err = agent.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list nodes: %v", err)
}

func TestAKilledAgentIsRestartedByTheLabKubeletAndCounted(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	before := readyPod(ctx, g, lab.West)
	c := cluster(g, lab.West)
	pid, restarts := agentProcess(g, c)
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func(g Gomega) {
		newPID, n := agentProcess(g, c)
		g.Expect(newPID).NotTo(Equal(pid))
		g.Expect(n).To(Equal(restarts + 1))
	}).Should(Succeed())
	after := readyPod(ctx, g, lab.West)
	g.Expect(after.UID).To(Equal(before.UID), "the same pod, its container restarted")
	st, err := testLab.DroverStatus(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	g.Expect(lab.PrintDroverStatus(&out, st)).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`%s\s+%s\s+running\s+%d\s`, before.Name, lab.West, restarts+1))
}

// agentProcess reads the pid and restart count of the agent's container from the cluster's lab
// kubelet.
func agentProcess(g Gomega, c *lab.Cluster) (pid int, restarts int32) {
	pods, err := c.DroverPods()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].Containers).To(HaveLen(1))
	ct := pods[0].Containers[0]
	g.Expect(ct.PID).To(BeNumerically(">", 0), "the agent runs")
	return ct.PID, ct.Restarts
}

var resourceOneGi = resource.MustParse("1Gi")
