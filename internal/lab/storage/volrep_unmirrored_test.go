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

// West is force-promoted while east is down, then its VolumeReplication is deleted (the
// application unprotected there): its image is an ordinary volume with a newer epoch. East
// returns still primary: it must neither mirror over west's image nor, once demoted, send it a
// final mirror; west keeps what it wrote.
func TestAStalePrimaryNeverOverwritesAPeerImagePromotedAfterItAndNoLongerMirrored(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns := "unmirrored-" + rand.String(5)
	class := replicationClass("lab-block-"+ns, time.Second)
	for _, cl := range []client.Client{east, west} {
		createNamespace(g, ctx, cl, ns)
		g.Expect(cl.Create(ctx, class.DeepCopy())).To(Succeed())
	}
	g.Expect(east.Create(ctx, blockPVC(ns, "data"))).To(Succeed())
	handle := boundHandle(g, ctx, east, ns, "data")
	writeFile(g, volumeDir(lab.East, handle), "synced", "from east")
	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class.Name, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, east, ns, "data").Status.LastSyncTime).NotTo(BeNil())
	}).Should(Succeed())

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	vr := volumeReplication(ns, "data", class.Name, replicationv1alpha1.Primary)
	g.Expect(west.Create(ctx, vr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getVR(g, ctx, west, ns, "data").Status.State).To(Equal(replicationv1alpha1.PrimaryState))
	}).Should(Succeed(), "west is force-promoted")
	g.Expect(west.Delete(ctx, vr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.West, handle).Role).To(Equal(storage.RoleNone))
	}).Should(Succeed(), "west's image is no longer mirrored")
	writeFile(g, volumeDir(lab.West, handle), "west", "written after the failover")
	want := readFiles(g, volumeDir(lab.West, handle))

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(conditionReason(vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + storage.ReasonSplitBrain))
	}).Should(Succeed(), "the returning stale primary reports itself stale")
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
}
