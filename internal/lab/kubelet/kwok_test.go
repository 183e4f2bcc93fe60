package kubelet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/drover-io/drover/internal/modroot"
)

// writeKubeconfig writes the test API server's admin credentials for a process of the test.
func writeKubeconfig(g Gomega, dir string) string {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["lab"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab"}
	kc.CurrentContext = "lab"
	g.Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())
	return kubeconfig
}

// startProcess runs a process for the rest of the test (killed with the test binary), logging to
// dir/name.log, which the test prints when it failed.
func startProcess(t *testing.T, g Gomega, dir, name string, argv ...string) *exec.Cmd {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec // the lab's own binaries
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("%s log:\n%s", name, data)
		}
	})
	return cmd
}

// startKwok runs kwok against the test API server with the lab's flags (internal/lab/cluster.go):
// it manages only nodes annotated kwok.x-k8s.io/node=fake.
func startKwok(t *testing.T, g Gomega) {
	root, err := modroot.Find()
	g.Expect(err).NotTo(HaveOccurred())
	bin := filepath.Join(root, "bin")
	dir := t.TempDir()
	startProcess(t, g, dir, "kwok", filepath.Join(bin, "kwok"), "--kubeconfig="+writeKubeconfig(g, dir),
		"--config="+filepath.Join(bin, "kwok-stages.yaml"), "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=4", "--server-address=")
}

func TestKwokLeavesTheLabKubeletsNodeAndPodsAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	createPod(g, probePod(ns, "real"))
	readyPod(g, ns, "real")
	startKwok(t, g)
	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "kwok-fake-1", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), "kwok-fake-1", metav1.DeleteOptions{}) })
	// kwok runs a node's pods only once it holds the node's Lease and has marked it Ready (the lab
	// waits for that too, bootstrap.go): a pod bound earlier may never be seen.
	g.Eventually(func(g Gomega) {
		node, err := cs.CoreV1().Nodes().Get(ctx, "kwok-fake-1", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(node.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
	}).Should(Succeed())
	fake := probePod(ns, "fake")
	fake.Spec.NodeName = "kwok-fake-1"
	createPod(g, fake)

	// Once kwok ran the fake pod, it has seen the lab kubelet's pod too.
	g.Eventually(func(g Gomega) {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, "fake", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
	}).Should(Succeed())
	real, err := cs.CoreV1().Pods(ns).Get(ctx, "real", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(DefaultPodCIDR.Contains(mustAddr(real.Status.PodIP))).To(BeTrue(), "pod IP %s", real.Status.PodIP)
	g.Expect(real.Status.ContainerStatuses[0].ContainerID).To(HavePrefix("lab://"))
	node, err := cs.CoreV1().Nodes().Get(ctx, DefaultNodeName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal("lab"))
	lease, err := cs.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, DefaultNodeName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*lease.Spec.HolderIdentity).To(Equal(DefaultNodeName))
	_, err = os.Stat(LogPath(testLogDir, ns, "fake", "probe"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the lab kubelet runs nothing for kwok's pods")
}
