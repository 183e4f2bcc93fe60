package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/deployer"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// The story of a self-contained application (protectedNamespaces): the user deployed a
// StatefulSet, its Service and a ConfigMap on east; drover captures them and restores them on
// west at failover with east stopped (the hub killed and restarted in the middle); when east
// returns, its agent removes the workload itself, keeps the PVCs and demotes, with no human
// step; the relocation back to east (the hub killed and restarted in the middle) loses no record.
func TestSelfContainedModeFailsOverAndRelocatesAStatefulSetWithItsObjects(t *testing.T) {
	a := newApp(t, "hub-selfcontained")
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "settings"}, Data: map[string]string{"mode": "production"}}
	a.g.Expect(east.Create(ctx, config)).To(Succeed())

	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	handles := a.volumes(lab.East)
	eastWriters := a.writing(lab.East, handles)
	a.g.Eventually(func(g Gomega) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, a.key, vrg)).To(Succeed())
		c := metav1.Condition{}
		for _, cc := range vrg.Status.Conditions {
			if cc.Type == v1alpha1.ConditionKubeObjectsReady {
				c = cc
			}
		}
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).Should(Succeed(), "east's group captured the application's objects")

	time.Sleep(interval / 2)
	lost, _ := a.lose(lab.East, handles)
	asked := a.ask(v1alpha1.ActionFailover, lab.West)
	a.waitPhase(v1alpha1.PhaseFailingOver)
	stop("hub")
	a.g.Expect(startHub()).To(Succeed())
	failedOver := a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the application fails over to west with its objects")
	t.Logf("failover: request → Available in %s (actionDuration %s)", time.Since(asked).Round(time.Millisecond), failedOver.Status.ActionDuration.Duration)
	a.g.Expect(cond(failedOver, v1alpha1.ConditionPeerReady).Reason).To(Equal(v1alpha1.ReasonPeerUnreachable))
	a.expectFailoverKept(lab.West, handles, eastWriters, lost)
	restored := &corev1.ConfigMap{}
	a.g.Expect(a.clusters[lab.West].Get(ctx, client.ObjectKeyFromObject(config), restored)).To(Succeed())
	a.g.Expect(restored.Data).To(Equal(config.Data))
	a.g.Expect(a.clusters[lab.West].Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "db"}, &corev1.Service{})).To(Succeed())
	a.writing(lab.West, handles)

	a.restore(lab.East)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east's group is Secondary with no human step")
	a.gone(lab.East)

	asked = a.ask(v1alpha1.ActionRelocate, lab.East)
	a.waitPhase(v1alpha1.PhaseRelocating)
	stop("hub")
	a.g.Expect(startHub()).To(Succeed())
	relocated := a.settledOn(v1alpha1.PhaseRelocated, lab.East, false, "the application relocates to east with its objects")
	t.Logf("relocate: request → Available in %s (actionDuration %s)", time.Since(asked).Round(time.Millisecond), relocated.Status.ActionDuration.Duration)
	a.expectNothingLost(lab.West, lab.East, handles)
	a.writing(lab.East, handles)
	a.settledOn(v1alpha1.PhaseRelocated, lab.East, true, "west's group is Secondary again")
	a.gone(lab.West)

	// kubectl describe drpc tells the story: every phase, step and turn of PeerReady and
	// Protected is an event.
	notes := a.expectEvents(v1alpha1.EventPhaseChanged, v1alpha1.EventProgressionChanged,
		v1alpha1.EventFailoverStarted, v1alpha1.EventFailoverCompleted, v1alpha1.EventRelocateStarted, v1alpha1.EventRelocateCompleted,
		v1alpha1.EventPeerReady, v1alpha1.EventPeerNotReady, v1alpha1.EventProtected, v1alpha1.EventProtectionLost)
	a.g.Expect(notes[v1alpha1.EventPhaseChanged]).To(ContainElement(ContainSubstring("Phase Deployed")))
	a.g.Expect(notes[v1alpha1.EventProgressionChanged]).To(ContainElement(HavePrefix("Relocating: step ")))
	a.g.Expect(notes[v1alpha1.EventPeerNotReady]).To(ContainElement(ContainSubstring("PeerReady False (ActionInProgress)")))
}

// appObjects returns the lab's demo application (internal/lab/deployer/testdata/app) in ns.
func appObjects(g Gomega, ns string) []client.Object {
	root, err := labtest.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(root, "internal", "lab", "deployer", "testdata", "app")
	_, err = os.Stat(dir)
	g.Expect(err).NotTo(HaveOccurred())
	manifests, err := deployer.LoadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	out := make([]client.Object, 0, len(manifests))
	for _, m := range manifests {
		m.SetNamespace(ns)
		out = append(out, m)
	}
	return out
}
