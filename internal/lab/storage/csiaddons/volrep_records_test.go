package csiaddons_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// The failover story told in workload records: a writer appends records on east while east
// mirrors to west; east is lost; west, force-promoted, holds every record up to the last
// mirror and none after; east returns, keeps writing as a stale primary, is demoted with
// autoResync and ends up with exactly west's records.
func TestRecordsSurviveAFailoverUpToTheLastMirrorAndTheOldPrimaryResyncs(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	const interval = 3 * time.Second
	ns, class, handle := newVolume(g, ctx, east, west, "records", interval)
	pod := storagetest.WriterPod(ns, "app", "data", 50*time.Millisecond)
	g.Expect(east.Create(ctx, pod)).To(Succeed())
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	writer := storage.WriterID(pod)
	eastDir, westDir := volumeDir(lab.East, handle), volumeDir(lab.West, handle)
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, eastDir, writer).LastSeq).To(BeNumerically(">", 10))
	}).Should(Succeed(), "the writer appends records on east")

	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	// Records written on east appear on west within one interval plus the copy time.
	seq := storagetest.WriterRecords(g, eastDir, writer).LastSeq
	written := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, westDir, writer).LastSeq).To(BeNumerically(">=", seq))
	}).WithTimeout(interval + 10*time.Second).Should(Succeed())
	t.Logf("record %d reached west %s after it was seen on east (interval %s)", seq, time.Since(written).Round(time.Millisecond), interval)
	// Let at least one more mirror complete, then lose east between two mirrors.
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, westDir, writer).LastSeq).To(BeNumerically(">", seq))
	}).WithTimeout(2*interval + 10*time.Second).Should(Succeed())
	time.Sleep(interval / 2)
	g.Expect(testLab.Stop(lab.East)).To(Succeed())

	eastLost, err := records.Verify(eastDir)
	g.Expect(err).NotTo(HaveOccurred())
	lastMirror := storagetest.WriterRecords(g, westDir, writer)
	wroteOnEast, _ := eastLost.Writer(writer)
	g.Expect(wroteOnEast.LastSeq).To(BeNumerically(">", lastMirror.LastSeq), "east wrote records after its last mirror")

	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
	}).Should(Succeed())

	promoted, err := records.Verify(westDir)
	g.Expect(err).NotTo(HaveOccurred())
	kept := storagetest.WriterRecords(g, westDir, writer)
	g.Expect(kept.LastSeq).To(Equal(lastMirror.LastSeq), "west has every record up to the last completed mirror")
	diff := records.Compare(eastLost, promoted)
	g.Expect(diff.Writers).To(HaveLen(1))
	g.Expect(diff.Writers[0].OnlyInB).To(BeEmpty(), "west has no record east did not write")
	g.Expect(diff.Writers[0].OnlyInA).To(Equal([]records.Range{{First: kept.LastSeq + 1, Last: wroteOnEast.LastSeq}}),
		"what is lost is exactly what east wrote after the last mirror")
	t.Logf("failover: east wrote %d records, west kept %d, lost %d written after the last mirror",
		wroteOnEast.LastSeq, kept.LastSeq, diff.Writers[0].OnlyInACount)

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, true)
	g.Eventually(func(g Gomega) {
		a, err := records.Verify(eastDir)
		g.Expect(err).NotTo(HaveOccurred())
		b, err := records.Verify(westDir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(records.Compare(a, b).Identical).To(BeTrue())
		g.Expect(getVR(g, ctx, east, ns, "data").Status.State).To(Equal(replicationv1alpha1.SecondaryState))
	}).WithTimeout(2*interval+30*time.Second).Should(Succeed(), "the old primary discards its stray writes and holds west's records")
	g.Eventually(func(g Gomega) {
		st := storagetest.WriterStatus(g, filepath.Join(testLab.Dir(), lab.East, "storage"), pod)
		g.Expect(st.Rejected).To(BeNumerically(">", 0))
	}).Should(Succeed(), "the writer still running on east is refused by the secondary image")
	g.Expect(east.Delete(ctx, pod)).To(Succeed())
}
