package volsync_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
	"github.com/drover-io/drover/internal/lab/storage/volsync"
)

func getDestination(g Gomega, cl client.Client, namespace, name string) *volsyncv1alpha1.ReplicationDestination {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rd)).To(Succeed())
	if rd.Status == nil {
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{}
	}
	return rd
}

// annotateDestination sets (value non-empty) or removes an annotation of a destination.
func annotateDestination(g Gomega, cl client.Client, namespace, name, key, value string) {
	rd := getDestination(g, cl, namespace, name)
	patch := client.MergeFrom(rd.DeepCopy())
	if rd.Annotations == nil {
		rd.Annotations = map[string]string{}
	}
	if value == "" {
		delete(rd.Annotations, key)
	} else {
		rd.Annotations[key] = value
	}
	g.Expect(cl.Patch(context.Background(), rd, patch)).To(Succeed())
}

func latestImageName(rd *volsyncv1alpha1.ReplicationDestination) string {
	if rd.Status == nil || rd.Status.LatestImage == nil {
		return ""
	}
	return rd.Status.LatestImage.Name
}

// As upstream (backube/volsync mover-rsync-tls/client.sh, statemachine/machine.go,
// rsynctls/mover.go): the source records a sync when its own mover ends, before the
// destination's image of it exists. A reader of latestImage right after the source's completion
// gets the image of the sync before; the image arrives later, even if the destination is paused
// meanwhile (pause stops mover Jobs, and this one has succeeded).
func TestVolSyncTheSourceCompletesBeforeTheDestinationHasTheImageOfItsSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	first := storagetest.Tree{"a.txt": []byte("first\n")}
	storagetest.WriteTree(g, source, first)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap1 := latestSnapshot(g, west, ns, "db", "")

	annotateDestination(g, west, ns, "db", volsync.HoldImageAnnotation, "true")
	second := storagetest.Tree{"a.txt": []byte("second\n")}
	storagetest.WriteTree(g, source, second)
	triggerManual(g, east, ns, "db", "second")
	awaitManualSync(g, east, ns, "db", "second")
	rd := getDestination(g, west, ns, "db")
	t.Logf("Source completed sync %q; the destination's latestImage is %q (the first sync's is %q)",
		"second", latestImageName(rd), snap1.Name)
	g.Expect(latestImageName(rd)).To(Equal(snap1.Name),
		"right after the source completed, latestImage is still the image of the sync before")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), second,
		"the destination volume holds the second sync already")
	g.Consistently(func(g Gomega) string {
		return latestImageName(getDestination(g, west, ns, "db"))
	}).WithTimeout(2*time.Second).WithPolling(storagetest.Polling).Should(Equal(snap1.Name), "the held image does not arrive")

	rd = getDestination(g, west, ns, "db")
	patch := client.MergeFrom(rd.DeepCopy())
	rd.Spec.Paused = true
	g.Expect(west.Patch(ctx, rd, patch)).To(Succeed())
	annotateDestination(g, west, ns, "db", volsync.HoldImageAnnotation, "")
	snap2 := latestSnapshot(g, west, ns, "db", snap1.Name)
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, snap2)), second,
		"the image that arrives after the pause holds the second sync")
}

// As upstream: a destination without a trigger syncs continuously, so right after a sync
// completes the next one starts and status.lastSyncStartTime is later than lastSyncTime.
func TestVolSyncAContinuousDestinationStartsItsNextSyncAtOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("one\n")})
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	latestSnapshot(g, west, ns, "db", "")
	g.Eventually(func(g Gomega) {
		st := getDestination(g, west, ns, "db").Status
		g.Expect(st.LastSyncTime).NotTo(BeNil())
		g.Expect(st.LastSyncStartTime).NotTo(BeNil(), "the next sync runs")
		g.Expect(st.LastSyncStartTime.Time).NotTo(BeTemporally("<", st.LastSyncTime.Time))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed())
}

// As upstream's copyMethod Snapshot (rsynctls/mover.go, ensureSourcePVC): a sync copies the
// source volume when it starts, so a sync that waits for its destination's mover sends what the
// volume held at its start, not what it holds when the destination is ready.
func TestVolSyncASyncSendsTheVolumeAsItWasWhenTheSyncStarted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	rd := getDestination(g, west, ns, "db")
	patch := client.MergeFrom(rd.DeepCopy())
	rd.Spec.Paused = true
	g.Expect(west.Patch(ctx, rd, patch)).To(Succeed())

	atStart := storagetest.Tree{"a.txt": []byte("when the sync started\n")}
	storagetest.WriteTree(g, source, atStart)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		rs := getSource(g, east, ns, "db")
		g.Expect(rs.Status.LastSyncStartTime).NotTo(BeNil())
		cond := findSynchronizing(rs)
		g.Expect(cond).NotTo(BeNil())
		// Waiting either way: for a connection (the paused destination's mover is gone), or, when
		// its mover listened before the pause reached it, for the destination to apply what the
		// source sent (a loaded machine's order).
		g.Expect(cond.Message).To(MatchRegexp(`accepts no connection|waiting for the destination to apply them`))
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "the source's mover runs and retries its connection, as upstream's does")
		g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonSync))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the sync started and waits for the paused destination")
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("written while the sync waited\n")})

	rd = getDestination(g, west, ns, "db")
	patch = client.MergeFrom(rd.DeepCopy())
	rd.Spec.Paused = false
	g.Expect(west.Patch(ctx, rd, patch)).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap := latestSnapshot(g, west, ns, "db", "")
	storagetest.SameTree(g, storagetest.ReadTree(g, snapshotDataDir(g, west, lab.West, snap)), atStart, "the image holds the volume as it was when the sync started")
}

func findSynchronizing(rs *volsyncv1alpha1.ReplicationSource) *metav1.Condition {
	return apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
}
