package csiaddons_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// setGroupState patches a VolumeGroupReplication's replicationState and autoResync.
func setGroupState(g Gomega, ctx context.Context, cl client.Client, ns string, rs replicationv1alpha1.ReplicationState, autoResync bool) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, vgr)).To(Succeed())
	patch := client.MergeFrom(vgr.DeepCopy())
	vgr.Spec.ReplicationState, vgr.Spec.AutoResync = rs, autoResync
	g.Expect(cl.Patch(ctx, vgr, patch)).To(Succeed())
}

// sameRecords expects the two clusters' copies of both volumes to hold the same records.
func sameRecords(g Gomega, tw twins) {
	for _, h := range tw.handles {
		a, err := records.Verify(volumeDir(lab.East, h))
		g.Expect(err).NotTo(HaveOccurred())
		b, err := records.Verify(volumeDir(lab.West, h))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(records.Compare(a, b).Identical).To(BeTrue(), "volume %s holds the same records on both clusters", h)
	}
}

// TestGroupRelocatesWithAFinalMirror: the application stopped, the group demoted on east sends a
// final mirror of every member; promoted on west (without force: the peer is a demoted, synced
// secondary), west holds every record east wrote, on both volumes.
func TestGroupRelocatesWithAFinalMirror(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	tw := newTwins(g, ctx, east, west, "vgr-relocate", time.Second)
	g.Expect(east.Create(ctx, volumeGroupReplication(tw, replicationv1alpha1.Primary))).To(Succeed())
	handle, content := groupHandle(g, ctx, east, tw.ns)
	g.Eventually(func(g Gomega) {
		g.Expect(groupState(g, lab.West, handle).LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "west receives a first point")

	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = tw.ns, "app"
	g.Expect(east.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pod), pod)).NotTo(Succeed())
	}).Should(Succeed(), "the application is stopped")
	lastA, lastB := lastRecords(g, lab.East, tw)
	setGroupState(g, ctx, east, tw.ns, replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		st := groupState(g, lab.East, handle)
		g.Expect(st.Role).To(Equal(state.RoleSecondary))
		g.Expect(st.FinalMirrorPending).To(BeFalse())
		for _, h := range tw.handles {
			g.Expect(imageState(g, lab.East, h).Writable()).To(BeFalse(), "every member is read-only with its group")
		}
	}).Should(Succeed(), "east's group is demoted and its final mirror sent")

	failOverGroup(g, ctx, west, tw, content)
	vr := &replicationv1alpha1.VolumeReplicationList{}
	g.Expect(west.List(ctx, vr, client.InNamespace(tw.ns))).To(Succeed())
	g.Expect(vr.Items).To(HaveLen(1))
	g.Expect(conditionMessage(&vr.Items[0], replicationv1alpha1.ConditionCompleted)).NotTo(ContainSubstring("force"), "promoted without force")
	a, b := lastRecords(g, lab.West, tw)
	t.Logf("relocation: east wrote a to %d and b to %d; west holds a to %d and b to %d", lastA.LastSeq, lastB.LastSeq, a.LastSeq, b.LastSeq)
	g.Expect([]uint64{a.LastSeq, b.LastSeq}).To(Equal([]uint64{lastA.LastSeq, lastB.LastSeq}), "a relocation loses nothing")
	sameRecords(g, tw)
}

// TestGroupFailsOverAndTheOldPrimaryResyncsAsOne: east is lost between two mirrors; west,
// force-promoted, holds both volumes from the last point; east returns, keeps writing as a stale
// primary, and, demoted with autoResync, discards its stray writes: both members end up with
// west's records.
func TestGroupFailsOverAndTheOldPrimaryResyncsAsOne(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	tw := newTwins(g, ctx, east, west, "vgr-resync", time.Second)
	g.Expect(east.Create(ctx, volumeGroupReplication(tw, replicationv1alpha1.Primary))).To(Succeed())
	handle, content := groupHandle(g, ctx, east, tw.ns)
	g.Eventually(func(g Gomega) {
		g.Expect(groupState(g, lab.West, handle).LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "west receives a first point")

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	eastA, eastB := lastRecords(g, lab.East, tw)
	failOverGroup(g, ctx, west, tw, content)
	a, b := lastRecords(g, lab.West, tw)
	g.Expect(records.CheckTwins(a, b)).To(Succeed(), "west's volumes hold one instant")
	t.Logf("failover: east wrote a to %d and b to %d; west holds a to %d and b to %d", eastA.LastSeq, eastB.LastSeq, a.LastSeq, b.LastSeq)

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	// A new client: the old one's connections went with east's API server.
	east = volRepClient(g, lab.East)
	g.Eventually(func(g Gomega) {
		setGroupState(g, ctx, east, tw.ns, replicationv1alpha1.Secondary, true)
	}).Should(Succeed(), "east's group is asked to resync as a secondary")
	g.Eventually(func(g Gomega) {
		sameRecords(g, tw)
		st := groupState(g, lab.East, handle)
		g.Expect(st.Role).To(Equal(state.RoleSecondary))
		g.Expect(st.NeedsResync).To(BeFalse())
		g.Expect(st.Epoch).To(Equal(groupState(g, lab.West, handle).Epoch))
	}).WithTimeout(time.Minute).Should(Succeed(), "the old primary discards its stray writes on both members and holds west's")
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: tw.ns, Name: "db"}, vgr)).To(Succeed())
	g.Expect(vgr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
}
