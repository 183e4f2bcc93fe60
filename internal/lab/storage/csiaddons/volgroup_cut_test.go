package csiaddons_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
	"github.com/drover-io/drover/internal/lab/storage/state"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// failOverGroup restores the group on west as a DR orchestrator does after east is lost: the
// PVs and PVCs of its volumes, its content with east's group handle, and a primary
// VolumeGroupReplication naming that content; it waits until the group is promoted.
func failOverGroup(g Gomega, ctx context.Context, west client.Client, tw twins, content *replicationv1alpha1.VolumeGroupReplicationContent) {
	for _, name := range []string{"a", "b"} {
		pv, pvc := restoredVolume(tw.ns, name, tw.handles[name])
		pvc.Labels = map[string]string{groupLabel: "db"}
		g.Expect(west.Create(ctx, pv)).To(Succeed())
		g.Expect(west.Create(ctx, pvc)).To(Succeed())
		boundHandle(g, ctx, west, tw.ns, name)
	}
	restored := &replicationv1alpha1.VolumeGroupReplicationContent{
		ObjectMeta: metav1.ObjectMeta{Name: "restored-" + tw.ns},
		Spec: replicationv1alpha1.VolumeGroupReplicationContentSpec{
			VolumeGroupReplicationHandle:    content.Spec.VolumeGroupReplicationHandle,
			Provisioner:                     content.Spec.Provisioner,
			VolumeGroupReplicationClassName: content.Spec.VolumeGroupReplicationClassName,
			Source:                          content.Spec.Source,
		},
	}
	g.Expect(west.Create(ctx, restored)).To(Succeed())
	vgr := volumeGroupReplication(tw, replicationv1alpha1.Primary)
	vgr.Spec.VolumeGroupReplicationContentName = restored.Name
	g.Expect(west.Create(ctx, vgr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)).To(Succeed())
		g.Expect(vgr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
	}).Should(Succeed(), "the group is promoted on west")
}

// TestCutGroupTransferNeverLeavesHalfAGroup cuts a group mirror from east half-way, then loses
// east and promotes the group on west. Cut before its intent record, west keeps its previous
// point, whole, and drops the staged copies; cut after the intent and the first member's
// replacement (west's volumes then hold a from the new point and b from the old one), west
// completes the new point before it promotes. Either way the promoted volumes hold one instant.
func TestCutGroupTransferNeverLeavesHalfAGroup(t *testing.T) {
	for _, cut := range []csiaddons.GroupCut{csiaddons.GroupCutBeforeIntent, csiaddons.GroupCutAfterFirstMember} {
		t.Run(string(cut), func(t *testing.T) { cutGroupTransfer(t, cut) })
	}
}

func cutGroupTransfer(t *testing.T, cut csiaddons.GroupCut) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	tw := newTwins(g, ctx, east, west, "cut", time.Second)
	g.Expect(east.Create(ctx, volumeGroupReplication(tw, replicationv1alpha1.Primary))).To(Succeed())
	handle, content := groupHandle(g, ctx, east, tw.ns)
	g.Eventually(func(g Gomega) {
		g.Expect(groupState(g, lab.West, handle).LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "west receives a first point")

	g.Expect(csiaddons.CutGroupTransfers(storageDir(lab.East), cut)).To(Succeed())
	t.Cleanup(func() { _ = csiaddons.RestoreGroupTransfers(storageDir(lab.East)) })
	g.Eventually(func(g Gomega) {
		fired, err := csiaddons.GroupTransfersCut(storageDir(lab.East))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fired).To(BeTrue())
	}).Should(Succeed(), "east's next group transfer is cut")
	if cut == csiaddons.GroupCutBeforeIntent {
		staged, err := filepath.Glob(state.GroupStagingPrefix(storageDir(lab.West), handle) + "*")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(staged).To(HaveLen(2), "the cut transfer copied both members to west")
	}
	previous := groupState(g, lab.West, handle)
	rawA, rawB := lastRecords(g, lab.West, tw)
	t.Logf("%s: west's volumes on disk after the cut: a ends at %d, b at %d (intent pending: %t): twin invariant %s",
		cut, rawA.LastSeq, rawB.LastSeq, intentPending(g, lab.West, handle), verdict(records.CheckTwins(rawA, rawB)))
	wantA, wantB := rawA.LastSeq, rawB.LastSeq
	if cut == csiaddons.GroupCutAfterFirstMember {
		g.Expect(intentPending(g, lab.West, handle)).To(BeTrue(), "the intent is recorded before the first member is replaced")
		// The member replaced first is the new point; the other is the old one until its staged
		// copy, still there, replaces it.
		left, err := filepath.Glob(state.GroupStagingPrefix(storageDir(lab.West), handle) + "*")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(left).To(HaveLen(1), "one member's staged copy is applied, one is not")
		newPoint := storagetest.WriterRecords(g, left[0], tw.writer).LastSeq
		if strings.HasSuffix(left[0], tw.handles["a"]) {
			wantA = newPoint
		} else {
			wantB = newPoint
		}
		g.Expect(records.CheckTwins(rawA, rawB)).To(HaveOccurred(), "with one member replaced and not the other, west's volumes on disk are of two instants")
	} else {
		g.Expect(intentPending(g, lab.West, handle)).To(BeFalse())
		g.Expect(records.CheckTwins(rawA, rawB)).To(Succeed(), "west keeps its previous point, whole")
	}

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	t.Cleanup(func() { g.Expect(testLab.Start(ctx, lab.East)).To(Succeed()) })
	failOverGroup(g, ctx, west, tw, content)
	a, b := lastRecords(g, lab.West, tw)
	t.Logf("%s: west promoted the group: a ends at %d, b at %d (west's previous point taken %s)", cut, a.LastSeq, b.LastSeq, previous.LastSyncTime)
	g.Expect(records.CheckTwins(a, b)).To(Succeed(), "the promoted volumes hold one instant")
	g.Expect([]uint64{a.LastSeq, b.LastSeq}).To(Equal([]uint64{wantA, wantB}))
	g.Expect(intentPending(g, lab.West, handle)).To(BeFalse())
	left, err := filepath.Glob(state.GroupStagingPrefix(storageDir(lab.West), handle) + "*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty(), "no staged copy is left behind")
}
