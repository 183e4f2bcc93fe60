package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/s3fault"
)

// A failover to west while west's own store is down (behind the lab's fault proxy, refusing
// connections; west's group lists it first): the promotion restores from east's store, says
// which store it skipped, reports west's store in ClusterDataProtected, and once that store
// heals writes west's claim and metadata there by itself.
func TestAFailoverWhileTheTargetsOwnStoreIsDownRestoresFromThePeersStore(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	ns := "own-store-down"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.StatefulSet(ns, "db", 1))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	g.Expect(profiles[1].Name).To(Equal("s3-west"))
	proxy, err := s3fault.Start(profiles[1].Endpoint)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = proxy.Close() }()
	eastGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", nil)
	westGroup.Spec.S3Profiles = []v1alpha1.S3Profile{profiles[1], profiles[0]}
	westGroup.Spec.S3Profiles[0].Endpoint = proxy.URL()
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	prefix := vrg.StorePrefix(eastGroup)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "east protects the StatefulSet, its metadata in both stores")

	// West's store goes down; east stops its workload and is demoted; west is promoted.
	g.Expect(proxy.Set(s3fault.Refuse, 0)).To(Succeed())
	vrglab.ScaleTo(ctx, g, east, client.ObjectKey{Namespace: ns, Name: "db"}, 0)
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).Should(Succeed(), "east is demoted")
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Message).To(And(ContainSubstring("restored from S3 profile s3-east"), ContainSubstring("skipped: "), ContainSubstring("s3-west")))
		p := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(p.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(p.Reason).To(Equal("StoreUnreachable"), p.Message)
		g.Expect(p.Message).To(ContainSubstring("s3-west"))
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	}).Should(Succeed(), "west restores from east's store and names its own store as down")

	g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		m, err := vrg.ReadMarker(ctx, stores[1], prefix)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m).NotTo(BeNil())
		g.Expect(m.Cluster).To(Equal(lab.West))
		g.Expect(m.Epoch).To(Equal(int64(2)))
	}).Should(Succeed(), "once west's store heals, west writes its claim and metadata there by itself")

	for _, c := range []struct {
		cl    client.Client
		group *v1alpha1.VolumeReplicationGroup
	}{{east, eastGroup}, {west, westGroup}} {
		g.Expect(c.cl.Delete(ctx, c.group)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(c.cl.Get(ctx, client.ObjectKeyFromObject(c.group), &v1alpha1.VolumeReplicationGroup{}))
		}).Should(BeTrue(), "unprotected while the proxy still forwards")
	}
}
