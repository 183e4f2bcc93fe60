package vrg

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
)

// opCounter counts a fake store's writes by key and its reads other than the markers'.
type opCounter struct {
	*objectstore.Fake
	mu     sync.Mutex
	writes map[string]int
	reads  int
}

func (c *opCounter) wrote(key string) {
	c.mu.Lock()
	c.writes[key]++
	c.mu.Unlock()
}

func (c *opCounter) read() {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
}

func (c *opCounter) Put(ctx context.Context, key string, body []byte) error {
	c.wrote(key)
	return c.Fake.Put(ctx, key, body)
}

func (c *opCounter) PutIf(ctx context.Context, key string, body []byte, version string) error {
	c.wrote(key)
	return c.Fake.PutIf(ctx, key, body, version)
}

func (c *opCounter) Delete(ctx context.Context, key string) error {
	c.wrote(key)
	return c.Fake.Delete(ctx, key)
}

func (c *opCounter) Get(ctx context.Context, key string) ([]byte, error) {
	c.read()
	return c.Fake.Get(ctx, key)
}

func (c *opCounter) List(ctx context.Context, prefix string) ([]string, error) {
	c.read()
	return c.Fake.List(ctx, prefix)
}

// reset returns the writes by key and the reads since the last reset.
func (c *opCounter) reset() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, r := c.writes, c.reads
	c.writes, c.reads = map[string]int{}, 0
	return w, r
}

// countedFixture is protectedFixture with kube objects and every store counted.
func countedFixture(t *testing.T) (*fixture, map[string]*opCounter) {
	f := protectedFixture(t)
	f.withKubeObjects(t)
	counters := map[string]*opCounter{}
	for name, s := range f.stores {
		counters[name] = &opCounter{Fake: s, writes: map[string]int{}}
	}
	f.r.NewStore = func(p objectstore.Profile) (objectstore.Store, error) { return counters[p.Name], nil }
	return f, counters
}

// dueCapture makes the group's next pass capture: its last capture an hour ago.
func (f *fixture) dueCapture(g Gomega) {
	got := f.group(g)
	got.Annotations[AnnotationKubeObjectsCapturedAt] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	g.Expect(f.client.Update(context.Background(), got)).To(Succeed())
	f.r.written.setCollected(got, time.Now().Add(-time.Hour))
}

func TestASettledGroupWritesToAStoreOnlyWhenWhatItHoldsChangesOrIsNoLongerKnown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, stores := countedFixture(t)
	east, west := stores["s3-east"], stores["s3-west"]
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	// Under the claim's own keys: the first pass claims epoch 1 (claimkeys.go).
	const pv, pvc, capture = "app/db/claims/1-east/pvs/pv-0.json", "app/db/claims/1-east/pvcs/app/data-db-0.json", "app/db/claims/1-east/" + kubeobjects.StoreKey
	for _, s := range []*opCounter{east, west} {
		w, _ := s.reset()
		g.Expect(w).To(HaveKey(pv))
		g.Expect(w).To(HaveKey(pvc))
		g.Expect(w).To(HaveKey(capture))
	}
	// That pass wrote the markers (the first claim), so the next one trusts nothing it knew:
	// it compares the metadata (equal, not written) and writes its capture once more, under the
	// markers as written.
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range []*opCounter{east, west} {
		w, r := s.reset()
		g.Expect(w).To(Equal(map[string]int{capture: 1}))
		g.Expect(r).To(BeNumerically(">", 0))
	}

	// Settled: passes with a capture due read the markers only, and write nothing.
	for range 3 {
		f.dueCapture(g)
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, s := range []*opCounter{east, west} {
		w, r := s.reset()
		g.Expect(w).To(BeEmpty(), "a settled group writes nothing to %s", s.Name())
		g.Expect(r).To(BeZero(), "nor reads more than the marker of %s", s.Name())
	}

	// A changed object is captured again into every store; the metadata is left alone.
	cm := &corev1.ConfigMap{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "conf"}, cm)).To(Succeed())
	cm.Data["k"] = "changed"
	g.Expect(f.client.Update(ctx, cm)).To(Succeed())
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range []*opCounter{east, west} {
		w, _ := s.reset()
		g.Expect(w).To(Equal(map[string]int{capture: 1}), "%s", s.Name())
	}

	// A changed PVC is written to every store, the rest compared and kept.
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, claim)).To(Succeed())
	claim.Labels["tier"] = "gold"
	g.Expect(f.client.Update(ctx, claim)).To(Succeed())
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range []*opCounter{east, west} {
		w, _ := s.reset()
		g.Expect(w).To(Equal(map[string]int{pvc: 1}), "%s", s.Name())
	}

	// East's store loses the group (its marker too): the next pass writes it all again there,
	// the marker first, then moves the marker to name that data (claimkeys.go); west is
	// untouched.
	g.Expect(east.Fake.DeletePrefix(ctx, "app/db/")).To(Succeed())
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	w, _ := east.reset()
	g.Expect(w).To(Equal(map[string]int{"app/db/" + MarkerKey: 2, pv: 1, pvc: 1, capture: 1}))
	w, _ = west.reset()
	g.Expect(w).To(BeEmpty())

	expectAnExpiredRecordVerified(g, f, west, pv)
}

// expectAnExpiredRecordVerified: a store loses an object behind the agent's back, its marker
// kept: the ledger still trusts the store until the record expires, and then the object is
// compared and written again.
func expectAnExpiredRecordVerified(g Gomega, f *fixture, store *opCounter, key string) {
	ctx := context.Background()
	g.Expect(store.Fake.Delete(ctx, key)).To(Succeed())
	_, err := f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	w, _ := store.reset()
	g.Expect(w).To(BeEmpty())
	f.r.written.update(f.group(g), store.Name(), storeViewOf(f.r.written, f.group(g), store.Name()), func(rec *storeRecord) {
		rec.metadataUntil = time.Now().Add(-time.Second)
	})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	w, _ = store.reset()
	g.Expect(w).To(Equal(map[string]int{key: 1}))
}

// storeViewOf is the view the ledger's record of a store was made under.
func storeViewOf(l *ledger, vrg *v1alpha1.VolumeReplicationGroup, profile string) storeView {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.group(vrg).stores[profile]
	return storeView{target: rec.target, marker: rec.marker, epoch: rec.epoch}
}

func TestADemotionIsRememberedForItsPVCInItsGenerationOnly(t *testing.T) {
	g := NewWithT(t)
	l := newLedger()
	group := &v1alpha1.VolumeReplicationGroup{}
	group.Namespace, group.Name, group.UID, group.Generation = "app", "db", "group-1", 4
	g.Expect(l.demotedAlready(group, "pvc-a")).To(BeFalse(), "nothing demoted yet")
	l.setDemoted(group, "pvc-a")
	g.Expect(l.demotedAlready(group, "pvc-a")).To(BeTrue())
	g.Expect(l.demotedAlready(group, "pvc-b")).To(BeFalse(), "another PVC (or the same name made again) is checked")

	group.Generation = 5
	g.Expect(l.demotedAlready(group, "pvc-a")).To(BeFalse(), "a new generation (another action or role) checks again")
	l.setDemoted(group, "pvc-b")
	group.Generation = 4
	g.Expect(l.demotedAlready(group, "pvc-a")).To(BeFalse(), "the records of an earlier generation are forgotten")

	again := group.DeepCopy()
	again.UID, again.Generation = "group-2", 5
	g.Expect(l.demotedAlready(again, "pvc-b")).To(BeFalse(), "a group made again under the same name starts with no record")
}
