package vrg

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
)

// putMarker writes a primary marker into a store under the fixture group's prefix.
func putMarker(g Gomega, store objectstore.Store, m PrimaryMarker) {
	body, err := json.Marshal(m)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(store.Put(context.Background(), "app/db/"+MarkerKey, body)).To(Succeed())
}

// markerOf reads the primary marker of the fixture group from a store.
func markerOf(g Gomega, store objectstore.Store) *PrimaryMarker {
	m, err := ReadMarker(context.Background(), store, "app/db/")
	g.Expect(err).NotTo(HaveOccurred())
	return m
}

// snapshot returns every object of the fixture group in a store, by key.
func snapshot(g Gomega, store objectstore.Store) map[string]string {
	ctx := context.Background()
	keys, err := store.List(ctx, "app/db/")
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, k := range keys {
		body, err := store.Get(ctx, k)
		g.Expect(err).NotTo(HaveOccurred())
		out[k] = string(body)
	}
	return out
}

// claimed returns the epoch the group recorded.
func claimed(g Gomega, vrg *v1alpha1.VolumeReplicationGroup) int64 {
	c, err := epochClaimOf(vrg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).NotTo(BeNil(), "the group recorded a claim")
	return c.Epoch
}

// protectedFixture is the fixture with one bound, replicating PVC of the group.
func protectedFixture(t *testing.T) *fixture {
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion, pv.Annotations = "", nil
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	f := newFixture(t, append(appWorkload(), pv, pvc)...)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	return f
}

func TestTheNextEpochIsOneMoreThanTheHighestReadable(t *testing.T) {
	down := &objectstore.Error{Kind: objectstore.KindUnreachable, Err: objectstore.ErrUnreachable}
	for _, tc := range []struct {
		name    string
		markers []storeMarker
		want    int64
		ok      bool
	}{
		{name: "no marker anywhere gives epoch 1", markers: []storeMarker{{name: "a"}, {name: "b"}}, want: 1, ok: true},
		{name: "the highest readable marker counts", want: 4, ok: true, markers: []storeMarker{
			{name: "a", marker: &PrimaryMarker{Cluster: "east", Epoch: 1}}, {name: "b", marker: &PrimaryMarker{Cluster: "west", Epoch: 3}},
		}},
		{name: "an unreadable store is skipped", want: 2, ok: true, markers: []storeMarker{
			{name: "a", marker: &PrimaryMarker{Cluster: "east", Epoch: 1}}, {name: "b", err: down},
		}},
		{name: "no readable store gives none", markers: []storeMarker{{name: "a", err: down}, {name: "b", err: down}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := nextEpoch(tc.markers)
			g.Expect(ok).To(Equal(tc.ok))
			if tc.ok {
				g.Expect(got).To(Equal(tc.want))
			}
		})
	}
}

func TestEachStoreMarkerMakesTheGroupStaleLaggingOrCurrent(t *testing.T) {
	own := PrimaryMarker{Cluster: "west", Epoch: 2}
	down := &objectstore.Error{Kind: objectstore.KindUnreachable, Err: objectstore.ErrUnreachable}
	for _, tc := range []struct {
		name        string
		markers     []storeMarker
		stale       string
		lagging     []string
		newest      bool
		failedStore string
	}{
		{name: "its own claim everywhere is current and newest", newest: true, markers: []storeMarker{
			{name: "a", marker: &own}, {name: "b", marker: &own},
		}},
		{name: "an older claim or none is lagging", newest: true, lagging: []string{"a", "b"}, markers: []storeMarker{
			{name: "a", marker: &PrimaryMarker{Cluster: "east", Epoch: 1}}, {name: "b"},
		}},
		{name: "its own claim sealed under a key rotated since is lagging, to be resealed", newest: true, lagging: []string{"b"}, markers: []storeMarker{
			{name: "a", marker: &own}, {name: "b", marker: &own, oldKey: true},
		}},
		{name: "a newer claim sealed under an older key still makes it stale", stale: "east", markers: []storeMarker{
			{name: "a", marker: &PrimaryMarker{Cluster: "east", Epoch: 3}, oldKey: true},
		}},
		{name: "a newer claim in one store makes it stale", stale: "east", markers: []storeMarker{
			{name: "a", marker: &own}, {name: "b", marker: &PrimaryMarker{Cluster: "east", Epoch: 3}},
		}},
		{name: "the same epoch claimed by another cluster makes it stale", stale: "east", markers: []storeMarker{
			{name: "a", marker: &PrimaryMarker{Cluster: "east", Epoch: 2}},
		}},
		{name: "an unreadable store is neither, and the group is not proven newest", failedStore: "b", markers: []storeMarker{
			{name: "a", marker: &own}, {name: "b", err: down},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			state, lagging := judgeEpoch("ns/g/", own, tc.markers)
			if tc.stale == "" {
				g.Expect(state.isStale()).To(BeFalse())
			} else {
				g.Expect(state.isStale()).To(BeTrue())
				g.Expect(state.stale.Cluster).To(Equal(tc.stale))
			}
			var names []string
			for _, m := range lagging {
				names = append(names, m.name)
			}
			g.Expect(names).To(Equal(tc.lagging))
			g.Expect(state.provenNewest()).To(Equal(tc.newest))
			if tc.failedStore != "" {
				g.Expect(state.writable(tc.failedStore)).To(MatchError(objectstore.ErrUnreachable))
			}
		})
	}
}

func TestAFirstProtectionClaimsEpochOneAndARestartKeepsIt(t *testing.T) {
	g := NewWithT(t)
	f := protectedFixture(t)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(1)))
	for _, s := range f.stores {
		m := markerOf(g, s)
		g.Expect(m).NotTo(BeNil(), "store %s", s.Name())
		g.Expect(*m).To(HaveField("Cluster", "east"))
		g.Expect(m.Epoch).To(Equal(int64(1)))
	}
	before := snapshot(g, f.stores["s3-east"])

	// A restarted agent (a new reconciler over the same cluster and stores) finds its claim.
	f.r = &Reconciler{Client: f.r.Client, APIReader: f.r.APIReader, Backends: f.r.Backends, NewStore: f.r.NewStore, ClusterName: "east", written: newLedger()}
	for range 2 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(1)))
	g.Expect(snapshot(g, f.stores["s3-east"])).To(Equal(before))
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
}

func TestAPromotionClaimsOneMoreThanEveryReadableStoreAndARestartDoesNotClaimAgain(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.r.ClusterName = "west"
	pvs, pvcs := peerGroup(1)
	for _, s := range f.stores {
		storeGroup(g, s, pvs, pvcs)
	}
	putMarker(g, f.stores["s3-east"], PrimaryMarker{Cluster: "east", Epoch: 3, Since: metav1.NewTime(t0)})
	putMarker(g, f.stores["s3-west"], PrimaryMarker{Cluster: "east", Epoch: 2, Since: metav1.NewTime(t0)})
	f.promote(g, v1alpha1.ActionFailover)

	// The restored PVC is not Bound yet in the fake: the restore is incomplete, so the
	// promotion goes on over several passes.
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(4)))
	for _, s := range f.stores {
		m := markerOf(g, s)
		g.Expect(m.Cluster).To(Equal("west"), "store %s", s.Name())
		g.Expect(m.Epoch).To(Equal(int64(4)), "store %s", s.Name())
	}
	g.Expect(restoreCompleted(f.group(g))).To(BeFalse())

	f.r = &Reconciler{Client: f.r.Client, APIReader: f.r.APIReader, Backends: f.r.Backends, NewStore: f.r.NewStore, ClusterName: "west", written: newLedger()}
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(4)), "a restarted agent keeps the promotion's claim")
	g.Expect(markerOf(g, f.stores["s3-east"]).Epoch).To(Equal(int64(4)))
}

func TestAPromotionWithNoReadableStoreClaimsNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.r.ClusterName = "west"
	for _, s := range f.stores {
		s.SetError(objectstore.ErrUnreachable)
	}
	f.promote(g, v1alpha1.ActionFailover)

	_, err := f.reconcile(g)
	g.Expect(err).To(MatchError(ContainSubstring("no S3 profile could be read")))
	g.Expect(f.group(g).Annotations).NotTo(HaveKey(AnnotationPrimaryEpoch), "an epoch is never guessed")
}

func TestAStalePrimaryWritesNothingToAnyStoreAndSaysWhoHoldsTheGroup(t *testing.T) {
	g := NewWithT(t)
	f := protectedFixture(t)
	f.withKubeObjects(t)
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(1)))

	// West was promoted while east was lost: it claimed epoch 2 in the store it reached and
	// wrote its metadata there; east's own store still says epoch 1.
	west := f.stores["s3-west"]
	g.Expect(west.DeletePrefix(context.Background(), "app/db/")).To(Succeed())
	putMarker(g, west, PrimaryMarker{Cluster: "west", Epoch: 2, Since: metav1.NewTime(t0)})
	g.Expect(west.Put(context.Background(), "app/db/pvs/pv-0.json", []byte(`{"written":"by west"}`))).To(Succeed())
	beforeEast, beforeWest := snapshot(g, f.stores["s3-east"]), snapshot(g, west)

	// Even with a capture due and a changed PVC, nothing is written anywhere.
	got := f.group(g)
	delete(got.Annotations, AnnotationKubeObjectsCapturedAt)
	g.Expect(f.client.Update(context.Background(), got)).To(Succeed())
	for range 2 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(snapshot(g, f.stores["s3-east"])).To(Equal(beforeEast), "east's own store is not written either")
	g.Expect(snapshot(g, west)).To(Equal(beforeWest), "the new primary's store keeps what it wrote")

	got = f.group(g)
	c := groupCondition(g, got, v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStalePrimary))
	g.Expect(c.Message).To(And(
		ContainSubstring("cluster west holds the group with epoch 2"),
		ContainSubstring("this group has epoch 1"),
		ContainSubstring("S3 profile s3-west"),
		ContainSubstring("The hub demotes this group when it reaches it")))
	k := groupCondition(g, got, v1alpha1.ConditionKubeObjectsReady)
	g.Expect(k.Reason).To(Equal(v1alpha1.ReasonStalePrimary))
}

func TestANewPrimaryCatchesUpAStoreThatMissedItsClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := protectedFixture(t)
	f.withKubeObjects(t)
	f.r.ClusterName = "west"
	east := f.stores["s3-east"]
	// East's store was down when west claimed epoch 2; it comes back with east's claim and
	// east's data.
	putMarker(g, east, PrimaryMarker{Cluster: "east", Epoch: 1, Since: metav1.NewTime(t0)})
	g.Expect(east.Put(ctx, "app/db/pvs/pv-0.json", []byte(`{"written":"by east"}`))).To(Succeed())
	g.Expect(east.Put(ctx, "app/db/"+kubeobjects.StoreKey, []byte(`{"written":"by east"}`))).To(Succeed())
	putMarker(g, f.stores["s3-west"], PrimaryMarker{Cluster: "west", Epoch: 2, Since: metav1.NewTime(t0)})
	got := f.group(g)
	got.Annotations = map[string]string{AnnotationPrimaryEpoch: `{"epoch":2,"generation":1,"since":"2026-11-30T01:00:00Z"}`}
	g.Expect(f.client.Update(ctx, got)).To(Succeed())
	east.SetError(objectstore.ErrUnreachable)
	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred(), "east's store does not answer: a condition, retried on a fixed delay")
	g.Expect(res.RequeueAfter).To(Equal(requeueStoreDown))
	g.Expect(f.group(g).Annotations).To(HaveKey(AnnotationKubeObjectsCapturedAt), "west captured into its store")

	// East's store returns. The next capture is an interval away: only the catch-up makes one.
	east.SetError(nil)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	want := snapshot(g, f.stores["s3-west"])
	g.Expect(want).To(HaveKey("app/db/claims/2-west/" + kubeobjects.StoreKey))
	m := markerOf(g, east)
	g.Expect(m.Cluster).To(Equal("west"))
	g.Expect(m.Epoch).To(Equal(int64(2)))
	g.Expect(m.Since.Time).To(BeTemporally("==", t0))
	g.Expect(snapshot(g, east)).To(Equal(want), "east's store now holds exactly what west's does: marker, metadata and capture")
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(2)))
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
}

func TestUnprotectRemovesTheMarkerWithTheMetadata(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := protectedFixture(t)
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(markerOf(g, f.stores["s3-east"])).NotTo(BeNil())

	g.Expect(f.client.Delete(ctx, f.group(g))).To(Succeed())
	for range 3 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, s := range f.stores {
		g.Expect(snapshot(g, s)).To(BeEmpty(), "store %s", s.Name())
	}
}

// racingStore is a fake store in which another primary's claim lands the first time this agent
// writes the group's marker: between its read of the marker and its write, the race the
// conditional write closes.
type racingStore struct {
	*objectstore.Fake
	once  sync.Once
	other PrimaryMarker
}

func (s *racingStore) land(key string) {
	if strings.HasSuffix(key, "/"+MarkerKey) {
		s.once.Do(func() {
			body, _ := json.Marshal(s.other)
			_ = s.Fake.Put(context.Background(), key, body)
		})
	}
}

func (s *racingStore) Put(ctx context.Context, key string, body []byte) error {
	s.land(key)
	return s.Fake.Put(ctx, key, body)
}

func (s *racingStore) PutIf(ctx context.Context, key string, body []byte, version string) error {
	s.land(key)
	// Through an interface, so that this test also builds where the store has no PutIf.
	return any(s.Fake).(interface {
		PutIf(context.Context, string, []byte, string) error
	}).PutIf(ctx, key, body, version)
}

// Two concurrent claims of a store (one wins since 2596a40, 2026-12-01), in the agent: east,
// primary with epoch 1, catches up west's store (which holds no marker), and west's promotion
// claims epoch 2 there between east's read and east's write. East's write must lose: west's
// claim stays, east writes nothing to west's store and reports itself a stale primary at once.
func TestACatchUpThatRacesANewerClaimLosesAndTheGroupIsStale(t *testing.T) {
	g := NewWithT(t)
	f := protectedFixture(t)
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed(g, f.group(g))).To(Equal(int64(1)))
	westClaim := PrimaryMarker{Cluster: "west", Epoch: 2, Since: metav1.NewTime(t0)}
	west := &racingStore{Fake: f.stores["s3-west"], other: westClaim}
	g.Expect(west.DeletePrefix(context.Background(), "app/db/")).To(Succeed())
	f.r.NewStore = func(p objectstore.Profile) (objectstore.Store, error) {
		if p.Name == "s3-west" {
			return west, nil
		}
		return f.stores[p.Name], nil
	}

	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	m := markerOf(g, west)
	g.Expect(m).NotTo(BeNil())
	g.Expect([]any{m.Cluster, m.Epoch}).To(Equal([]any{"west", int64(2)}), "west's claim, landed between east's read and write, stays")
	g.Expect(snapshot(g, west)).To(HaveLen(1), "east wrote no metadata into west's store: only west's marker is there")
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStalePrimary), c.Message)
	g.Expect(c.Message).To(ContainSubstring("cluster west holds the group with epoch 2"))
}
