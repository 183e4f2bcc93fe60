package volsynclab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// sourceSyncStart is the start of a ReplicationSource's last completed sync as the API stores
// it (lastSyncTime − lastSyncDuration, rounded up to the stored second), with its lastSyncTime
// to tell completions apart; zero before the first.
func sourceSyncStart(ctx context.Context, g Gomega, cl client.Client, ns, name string) (start, completed time.Time) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)).To(Succeed())
	if rs.Status == nil || rs.Status.LastSyncTime == nil || rs.Status.LastSyncDuration == nil {
		return time.Time{}, time.Time{}
	}
	completed = rs.Status.LastSyncTime.Time
	start = completed.Add(-rs.Status.LastSyncDuration.Duration)
	if whole := start.Truncate(time.Second); !whole.Equal(start) {
		start = whole.Add(time.Second)
	}
	return start, completed
}

// reportedPoint is the recovery point a group reports for one PVC, zero when none.
func reportedPoint(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, pvc string) time.Time {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
	for _, p := range got.Status.ProtectedPVCs {
		if p.Name == pvc && p.LastSyncTime != nil {
			return p.LastSyncTime.Time
		}
	}
	return time.Time{}
}

// The recovery point a group reports for a VolSync PVC is what a failover restores at least.
// Upstream's source records a sync when its mover ends and the destination takes the image of
// that sync later (its Job ends, the snapshot binds): meanwhile latestImage is the sync before.
// West's destination takes each image 20 s late; right after east's source completes a sync
// (b) whose image is pending, west can only restore the sync before it (a), and the point east
// reports must not be b's start. Once the next sync completes, the point reaches b.
func TestVolSyncRecoveryPointIsASyncWhoseImageTheDestinationHolds(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(120 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-point"
	p := startVolSyncPair(t, g, ns, 1, nil)
	east, west := p.east, p.west
	hubCopy(ctx, g, east, p.eastGroup, west, p.westGroup, 1)
	const pvc = "data-db-0"
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage).NotTo(BeNil())
	}).Should(Succeed(), "west's destination has an image")
	delayImages(ctx, g, west, ns, []string{pvc}, 20*time.Second)

	// Two completions after the delay: a, then b, whose image is 20 s late.
	_, before := sourceSyncStart(ctx, g, east, ns, pvc)
	var aCompleted time.Time
	g.Eventually(func(g Gomega) {
		_, aCompleted = sourceSyncStart(ctx, g, east, ns, pvc)
		g.Expect(aCompleted).To(BeTemporally(">", before))
	}).Should(Succeed(), "east's source completes a sync")
	var bStart, bCompleted time.Time
	g.Eventually(func(g Gomega) {
		bStart, bCompleted = sourceSyncStart(ctx, g, east, ns, pvc)
		g.Expect(bCompleted).To(BeTemporally(">", aCompleted))
	}).Should(Succeed(), "east's source completes the next sync")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
	t.Logf("east's source completed a sync that started at %s; west's latest image is %s", bStart.Format(time.RFC3339), rd.Status.LatestImage.Name)

	g.Consistently(func(g Gomega) {
		got := reportedPoint(ctx, g, east, p.eastGroup, pvc)
		g.Expect(got).To(BeTemporally("<", bStart), "east reports %s, the start of a sync whose image west does not hold yet", got.Format(time.RFC3339))
	}).WithTimeout(8*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(),
		"the reported recovery point stays before the sync whose image is pending")
	t.Logf("east reports %s while that image is pending", reportedPoint(ctx, g, east, p.eastGroup, pvc).Format(time.RFC3339))
	g.Eventually(func(g Gomega) {
		g.Expect(reportedPoint(ctx, g, east, p.eastGroup, pvc)).To(BeTemporally(">=", bStart))
	}).Should(Succeed(), "once the next sync completes, the point reaches that sync")
}
