package vrg

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// This file holds the agent's cache back on purpose (Sieve's stale views) and asserts that its
// destructive steps never act on it: the fixture's client is the API server and stays the
// reconciler's APIReader; the reconciler's Client reads through heldCache.

// heldCache is the agent's cache as it may lag the API server: the group reads as held (when
// set), the pods as none (hidePods), the PVCs, PVs and VolumeReplications as none (hideVolumes:
// the cache has not seen what the group just protected), the ReplicationSources and
// ReplicationDestinations as none (hideVolSync). fenced makes the API server enforce
// the fence: a dry-run pod is refused by the webhook, as ProbeFence expects.
type heldCache struct {
	client.Client
	group       *v1alpha1.VolumeReplicationGroup
	hidePods    bool
	hideVolumes bool
	hideVolSync bool
	fenced      bool
}

func (c *heldCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if g, ok := obj.(*v1alpha1.VolumeReplicationGroup); ok && c.group != nil {
		c.group.DeepCopyInto(g)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *heldCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *corev1.PodList:
		if c.hidePods {
			return nil
		}
	case *corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeList, *replicationv1alpha1.VolumeReplicationList:
		if c.hideVolumes {
			return nil
		}
	case *volsyncv1alpha1.ReplicationSourceList, *volsyncv1alpha1.ReplicationDestinationList:
		if c.hideVolSync {
			return nil
		}
	}
	return c.Client.List(ctx, list, opts...)
}

func (c *heldCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	co := &client.CreateOptions{}
	co.ApplyOptions(opts)
	if _, ok := obj.(*corev1.Pod); ok && len(co.DryRun) > 0 && c.fenced {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("admission webhook %q denied the request: the PVC is fenced", webhook.WebhookName)}}
	}
	return c.Client.Create(ctx, obj, opts...)
}

// A pod admitted a moment before the fence may not be in the cache when the relocation checks
// the PVC's consumers: the check behind the fence reads the API server, and the PVC is not
// demoted while the pod runs (its last writes would miss the final sync).
func TestARelocationNeverDemotesAPVCWhosePodTheCacheHasNotSeen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv, pvc := protectedPVC()
	running := podUsing("db-0", "data-db-0", corev1.PodRunning)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}
	f := newFixture(t, pv, pvc, running, ns)
	f.r.Fence = true
	f.r.Client = &heldCache{Client: f.client, hidePods: true, fenced: true}
	f.demote(g, v1alpha1.ActionRelocate)

	for range 2 {
		_, err := f.reconcile(g)
		g.Expect(err).NotTo(HaveOccurred())
	}
	c := pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCInUse), c.Message)
	g.Expect(c.Message).To(ContainSubstring("pod app/db-0"))
	g.Expect(f.backend.Demoted()).To(BeEmpty(), "not demoted while a pod the cache does not show runs")

	g.Expect(f.client.Delete(ctx, running)).To(Succeed())
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.backend.Demoted()).To(ContainElement("app/data-db-0"), "demoted once the API server shows no consumer")
}

// The relocation's final capture is written once: a pass on a cached copy of the group from
// before the capture was recorded, with the StatefulSet deleted since, must not write another
// capture without it (the peer would restore the application without its StatefulSet).
func TestAFinalCaptureIsNeverWrittenAgainOnACachedGroupFromBeforeIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, appWorkload()...)
	f.withKubeObjects(t)
	f.r.Fence = true
	puts := &putCounter{Fake: f.stores["s3-east"]}
	f.r.NewStore = func(p objectstore.Profile) (objectstore.Store, error) {
		if p.Name == "s3-east" {
			return puts, nil
		}
		return f.stores[p.Name], nil
	}
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(puts.puts).To(Equal(1), "the primary captured")

	f.vrg = f.group(g)
	f.demote(g, v1alpha1.ActionRelocate)
	before := f.group(g) // demoted, the final capture not recorded yet
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(puts.puts).To(Equal(2), "the final capture")
	g.Expect(f.group(g).Annotations).To(HaveKey(AnnotationKubeObjectsFinalCapture))
	err = f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the workloads are removed after the final capture")

	f.r.Client = &heldCache{Client: f.r.Client, group: before, fenced: true}
	for range 3 {
		_, _ = f.pass()
	}
	g.Expect(puts.puts).To(Equal(2), "no capture after the final one")
	body, err := puts.Get(ctx, fixtureData(g, puts)+kubeobjects.StoreKey)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := kubeobjects.Decode(body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kubeobjects.Summary(c.Objects)).To(ContainSubstring("StatefulSet"), "the store holds the capture with the StatefulSet")
}

// An unprotect right after a protection may run on a cache that has not seen what the group
// just protected: the group must not let go (its finalizer) while a PVC keeps drover's label
// and finalizer (the PVC could then never be deleted without a person, its PV stays Retain) or
// a kept VolumeReplication keeps replicating. The deletion path reads the API server.
func TestAnUnprotectNeverLetsGoOfWhatTheCacheHasNotSeenProtected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := protectedFixture(t)
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, pvc)).To(Succeed())
	g.Expect(pvc.Finalizers).To(ContainElement(PVCFinalizer), "protected")
	kept := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-1", Labels: map[string]string{
		volrep.LabelVRGName: "db", volrep.LabelVRGNamespace: "app",
	}}}
	g.Expect(f.client.Create(ctx, kept)).To(Succeed(), "a replica kept for a PVC the application deleted")

	f.r.Client = &heldCache{Client: f.client, hideVolumes: true}
	g.Expect(f.client.Delete(ctx, f.group(g))).To(Succeed())
	for range 3 {
		_, _ = f.pass()
	}
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
	g.Expect(pvc.Finalizers).NotTo(ContainElement(PVCFinalizer), "the PVC is released")
	g.Expect(pvc.Labels).NotTo(HaveKey(LabelProtectedBy))
	err = f.client.Get(ctx, client.ObjectKeyFromObject(kept), kept)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the kept replica is removed: %v", err)
	err = f.client.Get(ctx, client.ObjectKeyFromObject(f.vrg), &v1alpha1.VolumeReplicationGroup{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the group is gone once nothing is left: %v", err)
}

// The same for VolSync: an unprotect on a cache that has not seen the group's ReplicationSource
// and ReplicationDestination (made a moment before) must still remove them and their key
// Secrets. Released on the cache's word, the group is gone and the source goes on sending to a
// peer nobody protects, with nobody left to remove it.
func TestAnUnprotectRemovesTheVolSyncObjectsTheCacheHasNotSeen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := protectedFixture(t)
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{volsync.LabelVRGName: "db", volsync.LabelVRGNamespace: "app"}
	rs := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Labels: labels}}
	rd := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-1", Labels: labels}}
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: volsync.KeySecretName("db", "data-db-0")}}
	for _, obj := range []client.Object{rs, rd, key} {
		g.Expect(f.client.Create(ctx, obj)).To(Succeed())
	}

	held := &heldCache{Client: f.client, hideVolSync: true}
	backends, err := replication.NewRegistry(f.backend, volsync.New(held, f.client))
	g.Expect(err).NotTo(HaveOccurred())
	f.r.Backends, f.r.Client = backends, held
	g.Expect(f.client.Delete(ctx, f.group(g))).To(Succeed())
	for range 3 {
		_, _ = f.pass()
	}
	for _, obj := range []client.Object{rs, rd, key} {
		err := f.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is removed: %v", obj, obj.GetName(), err)
	}
	err = f.client.Get(ctx, client.ObjectKeyFromObject(f.vrg), &v1alpha1.VolumeReplicationGroup{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the group is gone once nothing is left: %v", err)
}
