package drpc

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

// heldBack is a gateway whose view of a cluster's group can be held back on purpose, as a
// watch-backed cache that has not caught up yet shows it: reads of the group return the held
// copy (or NotFound, when held as absent); every write goes to the cluster.
type heldBack struct {
	*gateway.Fake
	mu   sync.Mutex
	held map[string]*v1alpha1.VolumeReplicationGroup
	set  map[string]bool
}

// hold freezes a cluster's view of the group at vrg; nil shows no group.
func (h *heldBack) hold(cluster string, vrg *v1alpha1.VolumeReplicationGroup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if vrg != nil {
		vrg = vrg.DeepCopy()
	}
	h.held[cluster], h.set[cluster] = vrg, true
}

// release lets the cluster's view catch up.
func (h *heldBack) release(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, cluster)
	delete(h.set, cluster)
}

// Client implements gateway.Gateway.
func (h *heldBack) Client(ctx context.Context, cluster string) (client.Client, error) {
	cl, err := h.Fake.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return &heldReads{Client: cl, h: h, cluster: cluster}, nil
}

type heldReads struct {
	client.Client
	h       *heldBack
	cluster string
}

// Get implements client.Reader: a held group reads as held.
func (c *heldReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	vrg, ok := obj.(*v1alpha1.VolumeReplicationGroup)
	c.h.mu.Lock()
	held, isSet := c.h.held[c.cluster], c.h.set[c.cluster]
	c.h.mu.Unlock()
	switch {
	case !ok || !isSet:
		return c.Client.Get(ctx, key, obj, opts...)
	case held == nil:
		return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "volumereplicationgroups"}, key.Name)
	}
	held.DeepCopyInto(vrg)
	return nil
}

// reconcileHeld runs a few reconciles over a held-back view. They may fail: a patch computed
// from a stale copy can conflict, as it would on the API server; the reconcile is retried.
func (w *world) reconcileHeld() {
	w.t.Helper()
	for range 3 {
		if _, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key}); err != nil {
			w.t.Logf("reconcile over a held-back view: %v", err)
		}
	}
}

// until lets the hub and both agents act in turn until the DRPlacementControl has reached phase
// with primary, at most a few rounds.
func (w *world) until(phase v1alpha1.DRPCPhase, primary string) {
	w.t.Helper()
	for range 6 {
		w.reconcile()
		if d := w.drpc(); d.Status.Phase == phase && d.Status.CurrentPrimary == primary {
			return
		}
		w.agent("east", false)
		w.agent("west", false)
	}
	d := w.drpc()
	w.g.Expect([]string{string(d.Status.Phase), d.Status.CurrentPrimary}).To(Equal([]string{string(phase), primary}))
}

// newHeldBackWorld is newWorld with a gateway whose views can be held back.
func newHeldBackWorld(t *testing.T, drpc *v1alpha1.DRPlacementControl) (*world, *heldBack) {
	w := newWorld(t, drpc)
	h := &heldBack{Fake: w.gw, held: map[string]*v1alpha1.VolumeReplicationGroup{}, set: map[string]bool{}}
	w.r.Gateway = h
	return w, h
}

func TestAViewThatHasNotSeenTheGroupsYetNeverReleasesADeletion(t *testing.T) {
	w, h := newHeldBackWorld(t, appDRPC())
	ctx := context.Background()
	w.reconcile()
	for _, c := range []string{"east", "west"} {
		// The agent's finalizer keeps a group until it has unprotected.
		v := w.vrg(c)
		v.Finalizers = append(v.Finalizers, "drover.io/agent-test")
		w.g.Expect(w.clusters[c].Update(ctx, v)).To(Succeed())
		h.hold(c, nil)
	}
	w.g.Expect(w.hub.Delete(ctx, w.drpc())).To(Succeed())
	w.reconcileHeld()
	d := w.drpc()
	w.g.Expect(d.Finalizers).To(ContainElement(Finalizer), "the groups exist: the deletion waits for them whatever the view says")
	for _, c := range []string{"east", "west"} {
		w.g.Expect(w.vrg(c).DeletionTimestamp).NotTo(BeNil(), "%s's group is deleted on the cluster", c)
		h.release(c)
		v := w.vrg(c)
		v.Finalizers = nil
		w.g.Expect(w.clusters[c].Update(ctx, v)).To(Succeed())
	}
	w.reconcile()
	w.g.Expect(apierrors.IsNotFound(w.hub.Get(ctx, w.key, &v1alpha1.DRPlacementControl{}))).To(BeTrue(), "both groups gone: unprotected")
}

func TestAViewHeldBackBeforeAFailoverNeverPlacesTheApplication(t *testing.T) {
	w, h := newHeldBackWorld(t, placementDRPC())
	w.deployed()
	h.hold("west", w.vrg("west")) // secondary, DataReady at its generation
	w.gw.SetDown("east", true)
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.FailoverCluster = v1alpha1.ActionFailover, "west"
	})
	w.reconcileHeld()
	w.g.Expect(w.decision()).To(Equal([]string{"east"}), "not placed on west before its agent reports the promotion")
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailingOver))

	h.release("west")
	w.agent("west", false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseFailedOver))
	w.g.Expect(w.decision()).To(ContainElement("west"))
}

// relocate runs a relocation to target to its end, the agents acting at once.
func (w *world) relocate(target string) {
	w.t.Helper()
	source := "east"
	if target == "east" {
		source = "west"
	}
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, target
	})
	w.reconcile()
	w.agent(source, false)
	w.reconcile()
	w.agent(target, false)
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseRelocated))
}

func TestAViewShowingAnEarlierRelocationsFinalSyncNeverPromotesTheTarget(t *testing.T) {
	w, h := newHeldBackWorld(t, placementDRPC())
	w.deployed()
	w.relocate("west")
	earlier := w.vrg("east") // secondary, its final sync of the first relocation done
	w.g.Expect(earlier.FinalSyncComplete()).To(BeTrue())
	w.relocate("east")

	h.hold("east", earlier)
	w.now = w.now.Add(time.Minute)
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	w.reconcileHeld()
	w.g.Expect(w.vrg("west").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "no promotion on an earlier relocation's final sync")
	w.g.Expect(w.decision()).NotTo(ContainElement("west"))

	h.release("east")
	w.until(v1alpha1.PhaseRelocated, "west")
	w.g.Expect(w.decision()).To(Equal([]string{"west"}))
}

// heldHub is the hub's client with its view of the DRPlacementControl held back on purpose, as
// the manager's cache shows it before the watch has delivered the hub's own last write.
type heldHub struct {
	client.Client
	held *v1alpha1.DRPlacementControl
}

// Get implements client.Reader: the DRPlacementControl reads as held.
func (c *heldHub) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if d, ok := obj.(*v1alpha1.DRPlacementControl); ok && c.held != nil {
		c.held.DeepCopyInto(d)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A group's change wakes the DRPlacementControl at once, often before the hub's cache shows the
// status the hub has just written. Found in the e2e suite: the relocation had demoted east, a
// reconcile on the cached copy from before it began (spec Relocate, phase still FailedOver) found
// the relocation refused (east no longer protecting) and set east's group back to primary, and
// east's capture of the objects without the removed StatefulSet reached west.
func TestACachedCopyOlderThanTheHubsOwnWriteNeverUndoesAStep(t *testing.T) {
	w := newWorld(t, appDRPC())
	w.deployed()
	w.updateSpec(func(s *v1alpha1.DRPlacementControlSpec) {
		s.Action, s.PreferredCluster = v1alpha1.ActionRelocate, "west"
	})
	hub := &heldHub{Client: w.hub, held: w.drpc()} // spec Relocate, phase Deployed
	w.r.Client, w.r.APIReader = hub, w.hub
	w.reconcile()
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseRelocating))
	w.g.Expect(w.vrg("east").Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))

	w.reconcileHeld()
	east := w.vrg("east")
	w.g.Expect(east.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary), "east stays demoted whatever the cache shows")
	w.g.Expect(east.Spec.Action).To(Equal(v1alpha1.ActionRelocate))
	w.g.Expect(w.drpc().Status.Phase).To(Equal(v1alpha1.PhaseRelocating))

	hub.held = nil
	w.agent("east", false)
	w.until(v1alpha1.PhaseRelocated, "west")
}
