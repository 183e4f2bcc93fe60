package volsynclab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// withAddress sets the groups' spec.volSync.address, as the hub does from the DRPolicy.
func withAddress(mode v1alpha1.VolSyncAddress) func(*v1alpha1.VolumeReplicationGroup) {
	return func(vrg *v1alpha1.VolumeReplicationGroup) {
		vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Address: mode}
	}
}

// conditionOn is a condition of the group as stored.
func conditionOn(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, t string) metav1.Condition {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
	return vrglab.ConditionOf(got.Status.Conditions, t)
}

// replicates waits until east's group is protected and west's destination of data-db-0 holds a
// received image.
func replicates(ctx context.Context, g Gomega, p volSyncPair) {
	g.Eventually(func(g Gomega) {
		dp := conditionOn(ctx, g, p.east, p.eastGroup, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dp.Reason, dp.Message)
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: p.westGroup.Namespace, Name: "data-db-0"}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage).NotTo(BeNil(), "west received a sync")
	}).Should(Succeed(), "east's PVC replicates to west")
}

// A destination exported with a ServiceExport (spec.volSync.address ServiceExport) has a
// ClusterIP Service, which the peer reaches only through a Multi-Cluster Services
// implementation. Without the lab's multi-cluster network nothing exports it: west's group says
// so, naming the DRPolicy setting to choose, and reports no destination. With the network on
// the export is valid, west reports the clusterset address and east replicates to it. Deleting
// west's group deletes the ServiceExport.
func TestVolSyncAServiceExportDestinationIsUnreachableWithoutTheMultiClusterNetworkAndReplicatesWithIt(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	g.Expect(vrglab.Lab().SetMultiClusterNetwork(false)).To(Succeed())
	t.Cleanup(func() { _ = vrglab.Lab().SetMultiClusterNetwork(false) })
	ns := "volsync-export"
	p := startVolSyncPair(t, g, ns, 1, withAddress(v1alpha1.VolSyncAddressServiceExport))
	hubReceive(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)

	g.Eventually(func(g Gomega) {
		dp := conditionOn(ctx, g, p.west, p.westGroup, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Status).To(Equal(metav1.ConditionFalse), "%s: %s", dp.Reason, dp.Message)
		g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonVolSyncAddressUnreachable))
		g.Expect(dp.Message).To(ContainSubstring("spec.volSyncAddress to LoadBalancer"))
	}).Should(Succeed(), "west says its destination cannot be reached and what to choose")
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(p.west.Get(ctx, client.ObjectKeyFromObject(p.westGroup), got)).To(Succeed())
	g.Expect(got.Status.VolSyncDestinations).To(BeEmpty(), "no address the peer cannot use is reported")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.ServiceType).To(HaveValue(Equal(corev1.ServiceTypeClusterIP)))
	exportKey := client.ObjectKey{Namespace: ns, Name: volsync.DestinationServiceName("data-db-0")}
	se := &mcsv1alpha1.ServiceExport{}
	g.Expect(p.west.Get(ctx, exportKey, se)).To(Succeed())
	g.Expect(se.Status.Conditions).To(BeEmpty(), "without the network nothing marks the export")

	g.Expect(vrglab.Lab().SetMultiClusterNetwork(true)).To(Succeed())
	hubSend(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)
	g.Expect(p.west.Get(ctx, client.ObjectKeyFromObject(p.westGroup), got)).To(Succeed())
	g.Expect(got.Status.VolSyncDestinations).To(ConsistOf(HaveField("Address", volsync.ClustersetAddress(ns, "data-db-0"))))
	replicates(ctx, g, p)
	g.Eventually(func(g Gomega) {
		dp := conditionOn(ctx, g, p.west, p.westGroup, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonSecondary), dp.Message)
	}).Should(Succeed(), "west no longer reports a problem")

	g.Expect(p.west.Delete(ctx, p.westGroup.DeepCopy())).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := p.west.Get(ctx, exportKey, &mcsv1alpha1.ServiceExport{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ServiceExport is deleted with the group: %v", err)
	}).Should(Succeed())
}

// A destination reached by LoadBalancer (the DRPolicy's default, here asked explicitly) has a
// LoadBalancer Service whose address the peer reaches: east replicates to it, and no
// ServiceExport is made.
func TestVolSyncALoadBalancerDestinationReplicates(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-loadbalancer"
	p := startVolSyncPair(t, g, ns, 1, withAddress(v1alpha1.VolSyncAddressLoadBalancer))
	hubCopy(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(p.west.Get(ctx, client.ObjectKeyFromObject(p.westGroup), got)).To(Succeed())
	g.Expect(got.Status.VolSyncDestinations).To(HaveLen(1))
	g.Expect(strings.HasSuffix(got.Status.VolSyncDestinations[0].Address, mcsv1alpha1.ClustersetDomain)).To(BeFalse())
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.ServiceType).To(Equal(ptr.To(corev1.ServiceTypeLoadBalancer)))
	replicates(ctx, g, p)
	list := &mcsv1alpha1.ServiceExportList{}
	g.Expect(p.west.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}
