package lab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// A partitioned east keeps running and answers its administrator, but the hub's client to it
// (the DRCluster's kubeconfig Secret, as `drover cluster join` wrote it) fails, the hub reports
// it unreachable, and neither cluster's storage reaches the other; heal undoes all of it.
func TestPartitionCutsEastFromTheHubAndWestWhileEastRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).Should(Succeed())
	east, west := cluster(g, lab.East), cluster(g, lab.West)
	hubToEast := hubClientOf(g, ctx, lab.East)
	westStorage := peerView(g, west, east)
	eastStorage := peerView(g, east, west)
	g.Expect(serverVersion(hubToEast)).To(Succeed(), "the hub reaches east before the partition")
	g.Expect(westStorage.PeerReachable()).To(BeTrue(), "west's storage reaches east before the partition")

	g.Expect(testLab.Partition(lab.East)).To(Succeed())
	healed := false
	defer func() {
		if !healed {
			_ = testLab.Heal(lab.East)
		}
	}()
	g.Expect(serverVersion(hubToEast)).NotTo(Succeed(), "the hub's client to east fails during the partition")
	g.Expect(westStorage.PeerReachable()).To(BeFalse(), "west's storage sees east unreachable")
	g.Expect(eastStorage.PeerReachable()).To(BeFalse(), "east's storage sees west unreachable")
	g.Expect(clusterClient(g, lab.East).List(ctx, &corev1.NamespaceList{})).To(Succeed(), "east's API server answers its administrator directly")
	g.Expect(serverVersion(hubClientOf(g, ctx, lab.West))).To(Succeed(), "the hub still reaches west")
	g.Eventually(func(g Gomega) {
		expectDRCluster(g, droverStatus(g), lab.East, metav1.ConditionTrue, metav1.ConditionFalse)
	}).WithTimeout(droverStartTimeout).Should(Succeed(), "the hub reports east unreachable")

	g.Expect(testLab.Heal(lab.East)).To(Succeed())
	healed = true
	g.Expect(serverVersion(hubToEast)).To(Succeed(), "the hub reaches east after the heal")
	g.Expect(westStorage.PeerReachable()).To(BeTrue(), "west's storage reaches east after the heal")
	g.Expect(eastStorage.PeerReachable()).To(BeTrue(), "east's storage reaches west after the heal")
	g.Eventually(expectDroverReady).WithTimeout(droverStartTimeout).Should(Succeed(), "the hub reports east reachable again")
}

// hubClientOf is the hub's own client of a managed cluster: the kubeconfig in its DRCluster's
// Secret, with no retries so a refused connection fails at once.
func hubClientOf(g Gomega, ctx context.Context, name string) *discovery.DiscoveryClient {
	hub := hubClient(g)
	drc := &v1alpha1.DRCluster{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, drc)).To(Succeed())
	secret := &corev1.Secret{}
	ref := drc.Spec.KubeconfigSecretRef
	hubCore, err := testLab.Client(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hubCore.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[v1alpha1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 5 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	return dc
}

func serverVersion(dc *discovery.DiscoveryClient) error {
	_, err := dc.ServerVersion()
	return err
}

// peerView is a cluster's storage as its lab storage controller opens it, with the lab's
// partition flags: what it decides about its peer's reachability.
func peerView(g Gomega, c, peer *lab.Cluster) *storage.Images {
	im, err := storage.NewImages(c.StorageDir(), peer.StorageDir())
	g.Expect(err).NotTo(HaveOccurred())
	im.SetPartitionFlags(c.PartitionFlag(), peer.PartitionFlag())
	return im
}
