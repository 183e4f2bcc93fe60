package hub_test

import (
	"context"
	"path/filepath"
	"time"

	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
)

// lostReason is why the tests declare east lost.
const lostReason = "test: east's data centre is gone"

// declareLost sets or removes spec.lost on a DRCluster as `drover cluster lost` does, by a
// merge patch of the raw field.
func declareLost(ctx context.Context, g Gomega, hub client.Client, cluster string, lost bool) {
	body := []byte(`{"spec":{"lost":null}}`)
	if lost {
		body = []byte(`{"spec":{"lost":{"reason":"` + lostReason + `"}}}`)
	}
	drc := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
	g.Expect(hub.Patch(ctx, drc, client.RawPatch("application/merge-patch+json", body))).To(Succeed())
}

func fenced(g Gomega, hub client.Client, cluster string) (metav1.Condition, *v1alpha1.DRCluster) {
	drc := &v1alpha1.DRCluster{}
	g.Expect(hub.Get(context.Background(), client.ObjectKey{Name: cluster}, drc)).To(Succeed())
	c := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionFenced)
	g.Expect(c).NotTo(BeNil())
	return *c, drc
}

// Before a cluster could be declared lost (0d55117, 2026-12-01), a cluster lost for good held a
// DRPlacementControl's deletion forever.
// The application fails over to west with east stopped; east is declared lost and the DRPC
// deleted: the deletion completes without east, recording east's group. East then returns,
// still declared lost, with its old primary group and its workload: the hub demotes that group
// first (the agent removes the workload, so the application never runs on both), then removes
// it, and the Fenced condition and events say what happened.
func TestAClusterDeclaredLostHoldsNoDeletionAndIsDemotedWhenItReturns(t *testing.T) {
	a := newApp(t, "hub-lost")
	ctx := context.Background()
	east, west := a.clusters[lab.East], a.clusters[lab.West]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	handles := a.volumes(lab.East)
	a.writing(lab.East, handles)

	a.lose(lab.East, handles)
	a.ask(v1alpha1.ActionFailover, lab.West)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the application fails over to west")
	a.writing(lab.West, handles)

	declareLost(ctx, a.g, a.hub, lab.East, true)
	t.Cleanup(func() { declareLost(context.Background(), NewWithT(t), a.hub, lab.East, false) })
	deleted := time.Now()
	a.g.Expect(a.hub.Delete(ctx, a.drpc(a.g))).To(Succeed())
	a.g.Eventually(func(g Gomega) {
		d := &v1alpha1.DRPlacementControl{}
		err := a.hub.Get(ctx, a.key, d)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the DRPlacementControl is still there: %s (Available: %s)",
			d.Status.Phase, cond(d, v1alpha1.ConditionAvailable).Message)
	}).WithTimeout(30*time.Second).Should(Succeed(), "deleting the application does not wait for east, declared lost")
	t.Logf("deletion with east declared lost took %s", time.Since(deleted).Round(time.Millisecond))
	a.g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(west.Get(ctx, a.key, &v1alpha1.VolumeReplicationGroup{}))).To(BeTrue())
	}).Should(Succeed(), "west's group is unprotected")
	c, drc := fenced(a.g, a.hub, lab.East)
	a.g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	a.g.Expect(c.Reason).To(Equal(v1alpha1.ReasonDeclaredLost), c.Message)
	a.g.Expect(c.Message).To(ContainSubstring(lostReason))
	a.g.Expect(drc.Status.GroupsToRemove).To(Equal([]v1alpha1.GroupRef{{Namespace: a.ns, Name: "db", Demote: true}}),
		"east's group is recorded, to be demoted first: the application ran on west")

	// East returns, still declared lost, with its group primary and its workload. Its storage
	// loses the status write of its demotions (csi-addons' write fails after the driver demoted
	// the image, and csi-addons retries): rbd-mirror deletes each demoted image, whose primary
	// on west had its mirroring disabled, before the VolumeReplication ever reports Secondary,
	// and ceph-csi answers every later demotion NotFound. The group is removed all the same.
	eastStorage := filepath.Join(testLab.Dir(), lab.East, "storage")
	a.g.Expect(csiaddons.LoseDemotionReports(eastStorage, true)).To(Succeed())
	t.Cleanup(func() { NewWithT(t).Expect(csiaddons.LoseDemotionReports(eastStorage, false)).To(Succeed()) })
	returned := time.Now()
	a.restore(lab.East)
	a.gone(lab.East)
	t.Logf("east returned: its workload removed in %s", time.Since(returned).Round(time.Millisecond))
	a.g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(east.Get(ctx, a.key, &v1alpha1.VolumeReplicationGroup{}))).To(BeTrue())
		c, drc := fenced(g, a.hub, lab.East)
		g.Expect(drc.Status.GroupsToRemove).To(BeEmpty())
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonLostClusterReturned), c.Message)
		g.Expect(c.Message).To(ContainSubstring("no group is left to remove"))
	}).Should(Succeed(), "east's group is demoted, then removed")
	t.Logf("east returned: its group demoted and removed in %s", time.Since(returned).Round(time.Millisecond))
	a.writing(lab.West, handles)

	events := &corev1.EventList{}
	a.g.Expect(a.hub.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "DRCluster" && e.InvolvedObject.Name == lab.East {
			reasons[e.Reason] = true
		}
	}
	for _, r := range []string{v1alpha1.EventClusterDeclaredLost, v1alpha1.EventLostClusterReturned, v1alpha1.EventGroupDemoted, v1alpha1.EventGroupRemoved} {
		a.g.Expect(reasons).To(HaveKey(r), "event %s on DRCluster east", r)
	}

	declareLost(ctx, a.g, a.hub, lab.East, false)
	a.g.Eventually(func(g Gomega) {
		c, _ := fenced(g, a.hub, lab.East)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	}).Should(Succeed(), "east is no longer fenced once the declaration is removed")
}
