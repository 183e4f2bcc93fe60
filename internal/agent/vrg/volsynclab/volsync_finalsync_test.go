package volsynclab_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/agent/webhook"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// holdSync sets or removes the lab's hold on a ReplicationSource's running sync
// (storage.AnnotationHoldSync): held, the sync is sent and applied but does not complete.
func holdSync(ctx context.Context, g Gomega, cl client.Client, ns, name string, hold bool) {
	g.Eventually(func(g Gomega) {
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)).To(Succeed())
		patch := client.MergeFrom(rs.DeepCopy())
		if hold {
			metav1.SetMetaDataAnnotation(&rs.ObjectMeta, storage.AnnotationHoldSync, "true")
		} else {
			delete(rs.Annotations, storage.AnnotationHoldSync)
		}
		g.Expect(cl.Patch(ctx, rs, patch)).To(Succeed())
	}).Should(Succeed())
}

// A relocation whose final sync finds a sync in flight, started before the workload stopped:
// VolSync lets that sync satisfy a manual trigger set while it runs (it records the trigger
// current when it completes), so a final sync that trusts one trigger loses what was written
// after that sync's copy. East's writers write, its sources sync continuously (an interval
// below a minute); the lab holds each source's running sync once sent, the writers write past
// its copy, the relocation stops the workload (which deletes one PVC, so that final sync runs
// from a DR-owned PVC), and the holds are released only once the agent asked for the final
// sync. West's destinations must then hold every record east wrote.
func TestVolSyncRelocationWithASyncInFlightWhenTheWorkloadStopsLosesNoRecord(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-inflight"
	p := startVolSyncPair(t, g, ns, 2, nil)
	east, west, eastGroup, westGroup := p.east, p.west, p.eastGroup, p.westGroup
	hubCopy(ctx, g, east, eastGroup, west, westGroup, 2)
	writers := runningWriters(ctx, g, east, ns, 2)
	handles := map[string]string{}
	for pvc := range writers {
		handles[pvc] = pvcImage(ctx, g, east, ns, pvc)
	}
	g.Eventually(func(g Gomega) {
		for pvc, writer := range writers {
			rs := &volsyncv1alpha1.ReplicationSource{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
			g.Expect(rs.Spec.Trigger).To(BeNil(), "below a minute the source syncs continuously")
			w, ok := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, "volsync-"+pvc+"-dst")).Writer(writer)
			g.Expect(ok).To(BeTrue(), "west's destination of %s holds records of %s", pvc, writer)
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "east's records reach west")

	// A sync in flight on each source, and records written after its copy.
	copied := map[string]uint64{}
	for pvc, writer := range writers {
		holdSync(ctx, g, east, ns, pvc, true)
		g.Eventually(func(g Gomega) {
			rs := &volsyncv1alpha1.ReplicationSource{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
			g.Expect(rs.Status).NotTo(BeNil())
			cond := apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(ContainSubstring("held by annotation"))
		}).Should(Succeed(), "the sync of %s is sent and held", pvc)
		// The copy was taken before the hold was reported: it holds no later record.
		w, ok := vrglab.ImageReport(g, lab.East, handles[pvc]).Writer(writer)
		g.Expect(ok).To(BeTrue())
		copied[pvc] = w.LastSeq
	}
	g.Eventually(func(g Gomega) {
		for pvc, writer := range writers {
			w, _ := vrglab.ImageReport(g, lab.East, handles[pvc]).Writer(writer)
			g.Expect(w.LastSeq).To(BeNumerically(">", copied[pvc]))
		}
	}).Should(Succeed(), "the writers write past the copies in flight")

	// Relocate: the workload stops (one PVC deleted) while those syncs are in flight.
	const request = "relocate-inflight"
	wrote := stopForRelocation(ctx, g, east, eastGroup, request, handles, "data-db-1")

	// The held syncs complete only once the agent asked for the final sync.
	g.Eventually(func(g Gomega) {
		for pvc := range writers {
			rs := &volsyncv1alpha1.ReplicationSource{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
			g.Expect(rs.Spec.Trigger).NotTo(BeNil())
			g.Expect(rs.Spec.Trigger.Manual).NotTo(BeEmpty())
		}
	}).Should(Succeed(), "the agent asks each source for its final sync")
	for pvc := range writers {
		holdSync(ctx, g, east, ns, pvc, false)
	}
	awaitFinalSync(ctx, g, east, eastGroup, request)

	for pvc, writer := range writers {
		onWest := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, "volsync-"+pvc+"-dst"))
		w, _ := wrote[pvc].Writer(writer)
		kept, ok := onWest.Writer(writer)
		g.Expect(ok).To(BeTrue())
		for _, d := range records.Compare(wrote[pvc], onWest).Writers {
			g.Expect(d.OnlyInA).To(BeEmpty(), "%s: west's destination lacks records of %s (east wrote %d, the copy in flight held at most %d, west has %d)",
				pvc, d.Writer, w.LastSeq, copied[pvc], kept.LastSeq)
		}
		t.Logf("%s: east wrote %d records (the copy in flight at the stop held at most %d), west's destination holds %d, lost 0",
			pvc, w.LastSeq, copied[pvc], kept.LastSeq)
	}
}

// delayImages sets the lab's image delay on a group's ReplicationDestinations: each sync's
// image arrives that long after the source recorded the sync (storage.ImageDelayAnnotation).
func delayImages(ctx context.Context, g Gomega, cl client.Client, ns string, pvcs []string, delay time.Duration) {
	for _, pvc := range pvcs {
		g.Eventually(func(g Gomega) {
			rd := &volsyncv1alpha1.ReplicationDestination{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
			patch := client.MergeFrom(rd.DeepCopy())
			metav1.SetMetaDataAnnotation(&rd.ObjectMeta, storage.ImageDelayAnnotation, delay.String())
			g.Expect(cl.Patch(ctx, rd, patch)).To(Succeed())
		}).Should(Succeed())
	}
}

// A relocation whose destination takes its images late, as upstream's does (the source records
// a sync when its mover Job ends, the destination sets latestImage only after its own Job ended
// and the snapshot bound): the target, promoted as soon as the source reports its final sync,
// must restore an image that holds the final sync, not the image of the sync before it. East's
// writers write up to the stop; west's destinations take every image 5 s late; west is promoted
// the moment east's group records the final sync, and its restored PVCs must hold every record.
func TestVolSyncRelocationRestoresTheFinalSyncWhenTheDestinationsImagesAreLate(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-lateimage"
	p := startVolSyncPair(t, g, ns, 2, nil)
	east, west, eastGroup, westGroup := p.east, p.west, p.eastGroup, p.westGroup
	hubCopy(ctx, g, east, eastGroup, west, westGroup, 2)
	writers := runningWriters(ctx, g, east, ns, 2)
	handles := map[string]string{}
	var pvcs []string
	for pvc := range writers {
		handles[pvc] = pvcImage(ctx, g, east, ns, pvc)
		pvcs = append(pvcs, pvc)
	}
	g.Eventually(func(g Gomega) {
		for _, pvc := range pvcs {
			rd := &volsyncv1alpha1.ReplicationDestination{}
			g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
			g.Expect(rd.Status).NotTo(BeNil())
			g.Expect(rd.Status.LatestImage).NotTo(BeNil())
		}
	}).Should(Succeed(), "west's destinations have an image")
	const lateBy = 5 * time.Second
	delayImages(ctx, g, west, ns, pvcs, lateBy)

	const request = "relocate-late"
	wrote := stopForRelocation(ctx, g, east, eastGroup, request, handles)
	awaitFinalSync(ctx, g, east, eastGroup, request)

	// Promoted at once, as the hub does.
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
	}).Should(Succeed(), "west restores the PVCs")
	for pvc, writer := range writers {
		onWest := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, pvc))
		w, _ := wrote[pvc].Writer(writer)
		kept, ok := onWest.Writer(writer)
		g.Expect(ok).To(BeTrue(), "west's restored %s holds records of %s", pvc, writer)
		lost := 0
		for _, d := range records.Compare(wrote[pvc], onWest).Writers {
			for _, r := range d.OnlyInA {
				lost += int(r.Last - r.First + 1)
			}
		}
		t.Logf("%s: east wrote %d records up to the stop, west restored %d, lost %d", pvc, w.LastSeq, kept.LastSeq, lost)
		g.Expect(lost).To(BeZero(), "%s: a relocation loses no record (east wrote %d, west restored %d)", pvc, w.LastSeq, kept.LastSeq)
	}
}

// stopForRelocation does what the hub and the workload do when a relocation begins on east (cl):
// the group asked to demote for the final sync of request, the StatefulSet db deleted once the
// group is fenced (and the PVCs named by deleted), and it returns, once the consumer check
// passed, what the writers wrote into each PVC's volume (handles: lab volume by PVC).
func stopForRelocation(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup,
	request string, handles map[string]string, deleted ...string) map[string]records.Report {
	key, ns := client.ObjectKeyFromObject(group), group.Namespace
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, key, got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
		got.Spec.FinalSyncRequest = request
		g.Expect(cl.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKeyWithValue(webhook.AnnotationFence, webhook.FenceRelocate))
	}).Should(Succeed(), "the group is fenced for the relocation")
	g.Expect(cl.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	for _, pvc := range deleted {
		g.Expect(cl.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pvc}})).To(Succeed())
	}
	var wrote map[string]records.Report
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKey(vrg.AnnotationDemotedAt), "the consumer check passed behind the fence")
		wrote = map[string]records.Report{}
		for pvc, handle := range handles {
			wrote[pvc] = vrglab.ImageReport(g, lab.East, handle)
		}
	}).Should(Succeed(), "the workload is stopped: the writers' logs are final")
	return wrote
}

// awaitFinalSync waits until a group records the final sync of request and is Secondary.
func awaitFinalSync(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, request string) {
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(got.Status.FinalSync.Request).To(Equal(request))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).Should(Succeed(), "the group records the final sync and is Secondary")
}
