package volsynclab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage"
)

// A VolSync mover that fails is retried by VolSync with Synchronizing still SyncInProgress;
// only status.latestMoverStatus tells. The group says so, quoting the mover's log, and stops
// saying so once a retried mover succeeded.
func TestVolSyncAFailingMoverIsReportedOnTheGroup(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-mover"
	p := startVolSyncPair(t, g, ns, 1, nil)
	east, eastGroup := p.east, p.eastGroup
	hubCopy(ctx, g, east, eastGroup, p.west, p.westGroup, 1)
	dataProtected := func(g Gomega) metav1.Condition {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		return vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(dataProtected(g).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "east's PVC is protected")

	const logs = `rsync: [sender] opendir "/data" failed: Permission denied (13)`
	g.Eventually(func(g Gomega) {
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rs)).To(Succeed())
		metav1.SetMetaDataAnnotation(&rs.ObjectMeta, storage.AnnotationFailMover, logs)
		g.Expect(east.Update(ctx, rs)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		dp := dataProtected(g)
		g.Expect(dp.Status).To(Equal(metav1.ConditionFalse), "%s: %s", dp.Reason, dp.Message)
		g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonMoverFailed))
		g.Expect(dp.Message).To(ContainSubstring(logs))
	}).Should(Succeed(), "the group quotes the failing mover")

	g.Eventually(func(g Gomega) {
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rs)).To(Succeed())
		delete(rs.Annotations, storage.AnnotationFailMover)
		g.Expect(east.Update(ctx, rs)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		dp := dataProtected(g)
		g.Expect(dp.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dp.Reason, dp.Message)
	}).Should(Succeed(), "the group is protected again once a retried mover succeeded")
}
