package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/actions"
	"github.com/drover-io/drover/internal/lab"
)

// The story of an application with no PVC (yet): a namespace holding only a Secret and a
// ConfigMap is protected by its captured objects, Protected and PeerReady once every store
// holds them; a StatefulSet added later joins the group with its PVCs, and the group is
// Protected again once they synced. The failover plan says which case applies.
func TestAnApplicationWithNoPVCIsProtectedByItsObjectsUntilItsPVCsJoin(t *testing.T) {
	a := newApp(t, "hub-nopvc")
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	a.g.Expect(east.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "credentials"},
		StringData: map[string]string{"password": "s3cret"}})).To(Succeed())
	a.g.Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "settings"},
		Data: map[string]string{"mode": "production"}})).To(Succeed())

	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, false, "the application is deployed on east")
	a.g.Eventually(func(g Gomega) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, a.key, vrg)).To(Succeed())
		g.Expect(vrg.Status.ProtectedPVCs).To(BeEmpty())
		c := vrgCond(vrg, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(c.Message).To(ContainSubstring("ConfigMap"))
		g.Expect(c.Message).To(ContainSubstring("Secret"))
	}).Should(Succeed(), "east's group captured the Secret and the ConfigMap into the stores")
	a.plan(t, "with only a Secret and a ConfigMap, objects captured") // logged: the plan before Protected

	d := a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the objects alone make the application Protected and PeerReady")
	for _, s := range d.Status.VRGs {
		a.g.Expect(s.PVCs).To(BeEmpty(), "%s's group has no PVC to list", s.Cluster)
	}
	a.g.Expect(cond(d, v1alpha1.ConditionProtected).Message).To(HavePrefix("no PVCs selected: protected by its captured objects, last captured "))
	a.g.Expect(cond(d, v1alpha1.ConditionPeerReady).Message).To(ContainSubstring("takes over from the captured objects"))
	// The plan of the Protected application warns of nothing: asked again while a capture is
	// late (on a loaded machine a capture can be older than twice the interval for a moment).
	a.g.Eventually(func(g Gomega) {
		plan := a.plan(t, "with only a Secret and a ConfigMap, Protected")
		g.Expect(plan).To(ContainSubstring("Expected data loss: objects changed since the last capture ("))
		g.Expect(plan).NotTo(ContainSubstring("[warn]"))
	}).WithTimeout(30*time.Second).WithPolling(2*time.Second).Should(Succeed(), "the plan of the Protected application warns of nothing")

	// The StatefulSet comes: its PVCs join the group and are judged by their syncs.
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	d = a.pvcsProtectedOn(lab.East)
	a.g.Expect(cond(d, v1alpha1.ConditionProtected).Message).To(HavePrefix("data and metadata replicate; last group sync "))
	a.pvcsListedWithTheirSyncs(d, lab.East)
	plan := a.plan(t, "with the StatefulSet's PVCs synced")
	a.g.Expect(plan).To(ContainSubstring("Expected data loss: up to "))
}

// pvcsListedWithTheirSyncs checks the hub's list of the application's PVCs: the primary's
// group on cluster lists each PVC of the StatefulSet, protected, with its last sync (never older
// than the group's) and how long it took; the secondary, which only receives, lists none.
func (a *app) pvcsListedWithTheirSyncs(d *v1alpha1.DRPlacementControl, cluster string) {
	for _, s := range d.Status.VRGs {
		if s.Cluster != cluster {
			a.g.Expect(s.PVCs).To(BeEmpty(), "%s's secondary group receives the syncs and lists no PVC", s.Cluster)
			continue
		}
		a.g.Expect(s.PVCs).To(HaveLen(a.replicas), "%s's group lists each PVC", cluster)
		for i, p := range s.PVCs {
			a.g.Expect(p.Namespace + "/" + p.Name).To(Equal(fmt.Sprintf("%s/data-db-%d", a.ns, i)))
			a.g.Expect(p.DataProtected).To(Equal(metav1.ConditionTrue), "PVC %s", p.Name)
			a.g.Expect(p.Reason).To(BeEmpty(), "PVC %s", p.Name)
			a.g.Expect(p.LastSyncTime).NotTo(BeNil(), "PVC %s", p.Name)
			a.g.Expect(p.LastSyncTime.Before(s.LastGroupSyncTime)).To(BeFalse(), "PVC %s synced at %s, before its group's last sync %s",
				p.Name, p.LastSyncTime, s.LastGroupSyncTime)
			a.g.Expect(p.LastSyncDuration).NotTo(BeNil(), "PVC %s", p.Name)
		}
	}
}

// plan prints the failover plan to west as `drover plan failover` does, logs it and returns it.
func (a *app) plan(t *testing.T, when string) string {
	var out bytes.Buffer
	a.g.Expect(actions.Plan(context.Background(), a.hub, &out, actions.PlanOptions{Namespace: a.ns, App: a.key.Name,
		Action: v1alpha1.ActionFailover, To: lab.West})).To(Succeed())
	t.Logf("drover plan failover %s -n %s --to %s, %s:\n%s", a.key.Name, a.ns, lab.West, when, strings.TrimRight(out.String(), "\n"))
	return out.String()
}

// vrgCond returns a condition of a group; Unknown when absent.
func vrgCond(vrg *v1alpha1.VolumeReplicationGroup, t string) metav1.Condition {
	for _, c := range vrg.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionUnknown}
}
