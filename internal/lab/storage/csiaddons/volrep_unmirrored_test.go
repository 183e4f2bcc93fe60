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
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

// stalePrimaryOfAnUnmirroredPeer mirrors east's volume "data" to west, stops east, force-promotes
// west's image and deletes its VolumeReplication (the application unprotected there), so that
// west's image is an ordinary volume with a newer epoch; it returns with east still stopped, and
// what west's image then holds.
func stalePrimaryOfAnUnmirroredPeer(g Gomega, ctx context.Context, east, west client.Client, prefix string) (ns, handle string, want map[string]string) {
	ns, class, handle := newVolume(g, ctx, east, west, prefix, time.Second)
	writeFile(g, volumeDir(lab.East, handle), "synced", "from east")
	mirrored(g, ctx, east, ns, class, handle)

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	vr := volumeReplication(ns, "data", class, replicationv1alpha1.Primary)
	g.Expect(west.Create(ctx, vr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, west, ns, "data").Status.State).To(Equal(replicationv1alpha1.PrimaryState))
	}).Should(Succeed(), "west is force-promoted")
	g.Expect(west.Delete(ctx, vr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.West, handle).Role).To(Equal(storage.RoleNone))
	}).Should(Succeed(), "west's image is no longer mirrored")
	writeFile(g, volumeDir(lab.West, handle), "west", "written after the failover")
	return ns, handle, readFiles(g, volumeDir(lab.West, handle))
}

// expectDemotionAnsweredNotFound waits for east's demoted image to be deleted by rbd-mirror (its
// peer's primary had its mirroring disabled) and for its VolumeReplication to report what
// csi-addons writes when ceph-csi answers the demotion NotFound, with the state it had reported.
func expectDemotionAnsweredNotFound(g Gomega, ctx context.Context, east client.Client, ns, handle string, state replicationv1alpha1.State) {
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.East, handle).Deleted).To(BeTrue(), "rbd-mirror deleted east's image")
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.ObservedGeneration).To(Equal(vr.Generation))
		g.Expect(vr.Status.State).To(Equal(state), "csi-addons keeps the state it reported before (GetCurrentReplicationState)")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("False/" + csiaddons.ReasonFailedToDemote))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + csiaddons.ReasonError))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionDegraded)).To(ContainSubstring("rpc error: code = NotFound desc = volume " + handle + " not found"))
		g.Expect(vr.Status.Message).To(HavePrefix("volume " + handle + " not found"))
	}).Should(Succeed(), "every demotion of the deleted image is answered NotFound")
}

// West is force-promoted while east is down, then its VolumeReplication is deleted (the
// application unprotected there): its image is an ordinary volume with a newer epoch. East
// returns still primary: it must neither mirror over west's image nor, once demoted, send it a
// final mirror; west keeps what it wrote. Once demoted, east's image is deleted by rbd-mirror
// and every later demotion answered NotFound, the VolumeReplication still saying Secondary.
func TestAStalePrimaryNeverOverwritesAPeerImagePromotedAfterItAndNoLongerMirrored(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, handle, want := stalePrimaryOfAnUnmirroredPeer(g, ctx, east, west, "unmirrored")

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(Equal("Unknown/" + csiaddons.ReasonReplicating))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionReplicating)).To(ContainSubstring("promoted on the peer after this primary"))
	}).Should(Succeed(), "the returning stale primary reports that it cannot replicate")
	g.Consistently(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(Equal(want))
	}).WithTimeout(3*time.Second).Should(Succeed(), "for three mirror intervals, east mirrors nothing over west's image")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, true)
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.State).To(Equal(replicationv1alpha1.SecondaryState))
	}).Should(Succeed(), "east is demoted")
	g.Consistently(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(Equal(want))
	}).WithTimeout(2*time.Second).Should(Succeed(), "the demotion sent no final mirror over west's image")
	expectDemotionAnsweredNotFound(g, ctx, east, ns, handle, replicationv1alpha1.SecondaryState)
}

// The same stale primary, whose demotion's status write is lost (csi-addons' write fails after
// the driver demoted the image, and csi-addons retries): rbd-mirror deletes the demoted image
// before any Secondary report, and the VolumeReplication keeps saying Primary while every
// demotion is answered NotFound. West keeps what it wrote.
func TestAnImageDeletedBeforeItsDemotionIsReportedStaysPrimaryInTheStatusAndAnswersNotFound(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, handle, want := stalePrimaryOfAnUnmirroredPeer(g, ctx, east, west, "lostreport")
	eastStorage := filepath.Join(testLab.Dir(), lab.East, "storage")
	g.Expect(csiaddons.LoseDemotionReports(eastStorage, true)).To(Succeed())
	t.Cleanup(func() { NewWithT(t).Expect(csiaddons.LoseDemotionReports(eastStorage, false)).To(Succeed()) })

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, true)
	expectDemotionAnsweredNotFound(g, ctx, east, ns, handle, replicationv1alpha1.PrimaryState)
	g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(Equal(want))
}

// A primary demoted while its peer is down cannot send its final mirror: it reports itself
// Degraded (VolumeDegraded) and, at csi-addons' next check 15 s later, FailedToResync (ceph-csi
// finds no replaying status to read its last sync from), rather than in sync, and sends the
// mirror when the peer returns; only then, at a later check of csi-addons, is it Degraded
// False and Resyncing False (both sites demoted and in sync). A secondary reports no last sync
// (csi-addons does not either).
func TestADemotionWhosePeerIsDownReportsItselfOutOfSyncUntilTheFinalMirrorIsSent(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	// An hour: after the first mirror nothing is sent again unless a demotion sends it.
	ns, class, handle := newVolume(g, ctx, east, west, "finalmirror", time.Hour)
	mirrored(g, ctx, east, ns, class, handle)
	writeFile(g, volumeDir(lab.East, handle), "last", "written after the last mirror")

	g.Expect(testLab.Stop(lab.West)).To(Succeed())
	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("False/" + csiaddons.ReasonFailedToResync))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + csiaddons.ReasonError))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("False/" + csiaddons.ReasonFailedToResync))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionDegraded)).To(ContainSubstring("its peer is unreachable"))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(BeEmpty(), "a secondary has no Replicating condition")
		g.Expect(vr.Status.LastSyncTime).To(BeNil(), "a secondary reports no last sync")
	}).Should(Succeed(), "demoted, the final mirror waits for the peer")
	g.Expect(imageState(g, lab.East, handle).FinalMirrorPending).To(BeTrue())

	g.Expect(testLab.Start(ctx, lab.West)).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("False/" + csiaddons.ReasonNotResyncing))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonDemoted))
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKeyWithValue("last", "written after the last mirror"))
	}).Should(Succeed(), "the returning peer receives the final mirror, and only then is the demoted volume in sync")
	g.Expect(imageState(g, lab.East, handle).FinalMirrorPending).To(BeFalse())
}
