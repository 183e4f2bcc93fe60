package storage_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// A primary demoted while its peer is down cannot send its final mirror: it reports itself
// Degraded (FinalMirrorPending) rather than in sync, as csi-addons reports a demoted volume
// until its last snapshot reached the peer, and sends the mirror when the peer returns; only
// then is it Degraded False. A secondary reports no last sync (csi-addons does not either).
func TestADemotionWhosePeerIsDownReportsItselfOutOfSyncUntilTheFinalMirrorIsSent(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns := "finalmirror-" + rand.String(5)
	// An hour: after the first mirror nothing is sent again unless a demotion sends it.
	class := replicationClass("lab-block-"+ns, time.Hour)
	for _, cl := range []client.Client{east, west} {
		createNamespace(g, ctx, cl, ns)
		g.Expect(cl.Create(ctx, class.DeepCopy())).To(Succeed())
	}
	g.Expect(east.Create(ctx, blockPVC(ns, "data"))).To(Succeed())
	handle := boundHandle(g, ctx, east, ns, "data")
	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class.Name, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.LastSyncTime).NotTo(BeNil())
	}).Should(Succeed(), "the first mirror")
	writeFile(g, volumeDir(lab.East, handle), "last", "written after the last mirror")

	g.Expect(testLab.Stop(lab.West)).To(Succeed())
	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + storage.ReasonDemoted))
		g.Expect(conditionReason(vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + storage.ReasonFinalMirrorPending))
		g.Expect(vr.Status.LastSyncTime).To(BeNil(), "a secondary reports no last sync")
	}).Should(Succeed(), "demoted, the final mirror waits for the peer")
	g.Expect(imageState(g, lab.East, handle).FinalMirrorPending).To(BeTrue())

	g.Expect(testLab.Start(ctx, lab.West)).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + storage.ReasonHealthy))
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKeyWithValue("last", "written after the last mirror"))
	}).Should(Succeed(), "the returning peer receives the final mirror, and only then is the demoted volume in sync")
	g.Expect(imageState(g, lab.East, handle).FinalMirrorPending).To(BeFalse())
}
