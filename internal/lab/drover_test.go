package lab_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// droverStartTimeout bounds how long the hub takes to validate the lab's clusters and
// policies once they run: a probe or two.
const droverStartTimeout = 30 * time.Second

func droverStatus(g Gomega) lab.DroverStatus {
	st, err := testLab.DroverStatus(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

// droverProcess returns the drover process of a cluster from st.
func droverProcess(g Gomega, st lab.DroverStatus, cluster string) lab.DroverProcess {
	for _, p := range st.Processes {
		if p.Cluster == cluster {
			return p
		}
	}
	g.Expect(cluster).To(BeEmpty(), "status lists no drover process of this cluster")
	return lab.DroverProcess{}
}

func conditionIs(c *metav1.Condition, status metav1.ConditionStatus) bool {
	return c != nil && c.Status == status
}

// expectDRCluster asserts, within g, a DRCluster's Validated and Reachable conditions.
func expectDRCluster(g Gomega, st lab.DroverStatus, name string, validated, reachable metav1.ConditionStatus) {
	for _, c := range st.Clusters {
		if c.Name == name {
			g.Expect(conditionIs(c.Validated, validated)).To(BeTrue(), "DRCluster %s Validated %v", name, c.Validated)
			g.Expect(conditionIs(c.Reachable, reachable)).To(BeTrue(), "DRCluster %s Reachable %v", name, c.Reachable)
			return
		}
	}
	g.Expect(name).To(BeEmpty(), "the hub has no DRCluster of this name")
}

// expectDroverReady asserts, within g, that the pods of the hub and both agents run and that
// the hub has validated and reaches both clusters and validated both lab policies.
func expectDroverReady(g Gomega) {
	st := droverStatus(g)
	g.Expect(st.Processes).To(HaveLen(3))
	for _, p := range st.Processes {
		g.Expect(p.Running).To(BeTrue(), "%s of %s runs", p.Name, p.Cluster)
	}
	g.Expect(st.HubAnswered).To(BeTrue())
	expectDRCluster(g, st, lab.East, metav1.ConditionTrue, metav1.ConditionTrue)
	expectDRCluster(g, st, lab.West, metav1.ConditionTrue, metav1.ConditionTrue)
	validated := map[string]bool{}
	for _, p := range st.Policies {
		validated[p.Name] = conditionIs(p.Validated, metav1.ConditionTrue)
	}
	g.Expect(validated).To(Equal(map[string]bool{lab.PolicyVolRep: true, lab.PolicyVolSync: true}))
}

func hubClient(g Gomega) client.Client {
	cl, err := testLab.Client(lab.Hub, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

func TestLabInstallsDroverThatValidatesItsJoinedClustersAndPolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

	hub := hubClient(g)
	for _, name := range []string{lab.East, lab.West} {
		drc := &v1alpha1.DRCluster{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, drc)).To(Succeed())
		g.Expect(drc.Spec).To(Equal(v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(name)},
			S3ProfileName:       lab.S3ProfileName(name), Region: name,
		}))
		g.Expect(drc.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "drover"), "created by join")
		// The hub's credential is the join ServiceAccount's token, not a lab client certificate
		// (rbac_test.go proves what it may do).
		secret := &corev1.Secret{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(name)}, secret)).To(Succeed())
		cfg, err := clientcmd.Load(secret.Data[v1alpha1.KubeconfigSecretKey])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.AuthInfos).NotTo(BeEmpty())
		for _, user := range cfg.AuthInfos {
			g.Expect(user.Token).NotTo(BeEmpty())
			g.Expect(user.ClientCertificateData).To(BeEmpty())
		}

		managed, err := testLab.Client(name, replicationv1alpha1.AddToScheme)
		g.Expect(err).NotTo(HaveOccurred())
		class := &replicationv1alpha1.VolumeReplicationClass{}
		g.Expect(managed.Get(ctx, client.ObjectKey{Name: lab.ReplicationClassName(lab.PolicyInterval)}, class)).To(Succeed())
		g.Expect(class.Spec.Provisioner).To(Equal(lab.BlockDriver))
		g.Expect(class.Spec.Parameters).To(HaveKeyWithValue("schedulingInterval", "5s"))
	}

	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	for name, backend := range map[string]v1alpha1.StorageClassBackend{
		lab.PolicyVolRep:  {Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep},
		lab.PolicyVolSync: {Provisioner: lab.FileDriver, Backend: v1alpha1.BackendVolSync},
	} {
		p := &v1alpha1.DRPolicy{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		g.Expect(p.Spec.DRClusters).To(Equal([]string{lab.East, lab.West}))
		g.Expect(p.Spec.SchedulingInterval).To(BeEquivalentTo(lab.PolicyInterval.String()))
		g.Expect(p.Spec.StorageClassBackends).To(Equal([]v1alpha1.StorageClassBackend{backend}))
		g.Expect(p.Spec.S3Profiles).To(HaveLen(len(profiles)))
		for i, prof := range profiles {
			g.Expect(p.Spec.S3Profiles[i].Name).To(Equal(prof.Name))
			g.Expect(p.Spec.S3Profiles[i].Endpoint).To(Equal(prof.Endpoint))
			g.Expect(p.Spec.S3Profiles[i].SecretRef).To(Equal(v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: prof.Name}))
		}
	}

	var out strings.Builder
	g.Expect(lab.PrintDroverStatus(&out, droverStatus(g))).To(Succeed())
	for _, want := range []string{"drover-hub-", "drover-agent-", "east", "lab-volrep", "lab-volsync", "REACHABLE"} {
		g.Expect(out.String()).To(ContainSubstring(want))
	}
}

func TestStoppedClusterLosesItsAgentTurnsUnreachableAndComesBackWithIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	agent := droverProcess(g, droverStatus(g), lab.East)

	// The hub's failure clock starts at its first failed probe, after east's API server stopped.
	stopping := time.Now()
	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	st := droverStatus(g)
	g.Expect(droverProcess(g, st, lab.East).Running).To(BeFalse(), "a lost cluster loses its agent")
	g.Expect(droverProcess(g, st, lab.West).Running).To(BeTrue(), "west's agent is not east's")
	g.Expect(droverProcess(g, st, lab.Hub).Running).To(BeTrue())
	g.Expect(syscall.Kill(agent.PID, 0)).To(MatchError(syscall.ESRCH), "east's agent process %d is gone", agent.PID)

	g.Eventually(func(g Gomega) {
		expectDRCluster(g, droverStatus(g), lab.East, metav1.ConditionTrue, metav1.ConditionFalse)
	}).WithTimeout(hubUnreachableAfter+10*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(),
		"the hub reports east unreachable after its grace period")
	g.Expect(time.Since(stopping)).To(BeNumerically(">=", hubUnreachableAfter), "not before the grace period")
	expectDRCluster(g, droverStatus(g), lab.West, metav1.ConditionTrue, metav1.ConditionTrue)

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	g.Eventually(func(g Gomega) {
		back := droverProcess(g, droverStatus(g), lab.East)
		g.Expect(back.Running).To(BeTrue(), "east's agent starts with east")
		g.Expect(back.PID).NotTo(Equal(agent.PID))
		expectDRCluster(g, droverStatus(g), lab.East, metav1.ConditionTrue, metav1.ConditionTrue)
	}).WithTimeout(droverStartTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), "east and its agent are back")
}

func TestAKilledHubIsRestartedByTheLabKubeletAndReconciles(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	killed := droverProcess(g, droverStatus(g), lab.Hub)
	g.Expect(syscall.Kill(killed.PID, syscall.SIGKILL)).To(Succeed())

	g.Eventually(func(g Gomega) {
		restarted := droverProcess(g, droverStatus(g), lab.Hub)
		g.Expect(restarted.Running).To(BeTrue())
		g.Expect(restarted.PID).NotTo(Equal(killed.PID))
		g.Expect(restarted.Pod).To(Equal(killed.Pod), "the same pod, its container restarted")
		g.Expect(restarted.Restarts).To(Equal(killed.Restarts + 1))
	}).WithTimeout(droverStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

	// The new hub reconciles: a DRCluster without its Secret is judged at once.
	hub := hubClient(g)
	north := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: "north"}, Spec: v1alpha1.DRClusterSpec{
		KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: "kubeconfig-north"}, S3ProfileName: "s3-north", Region: "north",
	}}
	g.Expect(hub.Create(ctx, north)).To(Succeed())
	t.Cleanup(func() { _ = hub.Delete(context.Background(), north) })
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(north), north)).To(Succeed())
		g.Expect(conditionIs(apimeta.FindStatusCondition(north.Status.Conditions, v1alpha1.ConditionValidated), metav1.ConditionFalse)).To(BeTrue())
	}).WithTimeout(droverStartTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), "the restarted hub validates DRClusters")
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}
