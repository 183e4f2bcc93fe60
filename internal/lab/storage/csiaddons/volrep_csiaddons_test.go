package csiaddons_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

// csi-addons' getInfoReconcileInterval (volumereplication_controller.go): the refresh of a
// primary's status is the class's interval below 2 minutes, half of it above, and an hour for
// a parameter time.ParseDuration cannot read, ceph-csi's days among them.
func TestInfoReconcileIntervalIsCSIAddons(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		"5s": 5 * time.Second, "1m": time.Minute, "90s": 90 * time.Second, "2m": time.Minute,
		"5m": 150 * time.Second, "1h": 30 * time.Minute, "1d": time.Hour, "": time.Hour, "soon": time.Hour,
	} {
		if got := csiaddons.InfoReconcileInterval(raw); got != want {
			t.Errorf("InfoReconcileInterval(%q) = %s, want %s", raw, got, want)
		}
	}
}

// csi-addons reads a primary's last sync from the storage only at its reconciles: at the
// promotion and then every refresh interval (here the class's 3 s). The storage mirrors right
// after the promotion, but the VolumeReplication reports that mirror only at the next refresh.
func TestAPrimarysLastSyncIsReportedOnlyAtCSIAddonsRefresh(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "refresh", 3*time.Second)
	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.East, handle).LastSyncTime).NotTo(BeNil())
		g.Expect(getVR(g, ctx, east, ns, "data").Status.State).To(Equal(replicationv1alpha1.PrimaryState))
	}).Should(Succeed(), "the storage mirrors the new primary at once, and csi-addons reports the promotion")
	g.Consistently(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.LastSyncTime).To(BeNil())
	}).WithTimeout(time.Second).Should(Succeed(), "csi-addons read the storage before that mirror and reads it again only at its next refresh")
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.LastSyncTime).NotTo(BeNil())
	}).WithTimeout(10*time.Second).Should(Succeed(), "the refresh reports it")
}

// ceph-csi reports a secondary's resync ready only when both sites are up+unknown, i.e. both
// demoted and in sync; a secondary replaying a live primary is not ready, so csi-addons keeps
// it Degraded True and Resyncing True (ResyncTriggered) and looks again every 30 s (here, the
// class being the lab's 2 s, every 2 s). Only once the primary is demoted too (a relocation's
// final sync) are both reported in sync.
func TestASecondaryOfALivePrimaryIsNeverReportedInSync(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "replaying", 2*time.Second)
	mirrored(g, ctx, east, ns, class, handle)
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Secondary))).To(Succeed())
	writeFile(g, volumeDir(lab.East, handle), "later", "written while west is secondary")

	resyncing := func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonDemoted))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + csiaddons.ReasonVolumeDegraded))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("True/" + csiaddons.ReasonResyncTriggered))
	}
	g.Eventually(resyncing).Should(Succeed(), "west replays east and is reported resyncing")
	g.Eventually(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKey("later"))
	}).Should(Succeed(), "west receives east's mirrors")
	g.Consistently(resyncing).WithTimeout(5*time.Second).Should(Succeed(), "over two more checks west is still not reported in sync")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, false)
	for _, cl := range []struct {
		name string
		vr   func(Gomega) *replicationv1alpha1.VolumeReplication
	}{
		{lab.East, func(g Gomega) *replicationv1alpha1.VolumeReplication { return getVR(g, ctx, east, ns, "data") }},
		{lab.West, func(g Gomega) *replicationv1alpha1.VolumeReplication { return getVR(g, ctx, west, ns, "data") }},
	} {
		g.Eventually(func(g Gomega) {
			vr := cl.vr(g)
			g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
			g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("False/" + csiaddons.ReasonNotResyncing))
		}).Should(Succeed(), "with east demoted too, %s is reported in sync", cl.name)
	}
}

// A primary demoted after its peer was promoted over it has diverged (split brain): ceph-csi's
// resync without force fails, and csi-addons reports FailedToResync; with autoResync the resync
// is forced and the volume replays the new primary.
func TestASplitBrainedSecondaryWithoutForceFailsToResync(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "splitbrain", 2*time.Second)
	mirrored(g, ctx, east, ns, class, handle)
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.West, handle).Role).To(Equal(storage.RolePrimary))
	}).Should(Succeed(), "west is force-promoted over east")
	writeFile(g, volumeDir(lab.West, handle), "west", "written on the new primary")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("False/" + csiaddons.ReasonFailedToResync))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + csiaddons.ReasonError))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("False/" + csiaddons.ReasonFailedToResync))
	}).Should(Succeed(), "east, demoted without force, fails to resync")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, true)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("True/" + csiaddons.ReasonResyncTriggered))
		g.Expect(readFiles(g, volumeDir(lab.East, handle))).To(HaveKeyWithValue("west", "written on the new primary"))
	}).Should(Succeed(), "with autoResync east discards its divergence and replays west")
}
