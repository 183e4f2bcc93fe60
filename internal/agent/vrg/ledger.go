package vrg

import (
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// What a settled group writes (DESIGN.md: a settled group costs nothing between syncs). The
// storage syncs every interval and the group's status records each sync: that is the one write
// a settled group makes. Its metadata and its captured objects change rarely, so the agent
// remembers, per group and store, a digest of what it last wrote there or found there, and
// writes again only when the content differs. Reading the store to compare would cost a GET per
// object every pass; the ledger costs nothing.
//
// A record is trusted only while the store's primary marker is still the version read when the
// record was made, and this group's epoch is the same: a claim by any primary (a failover, a
// relocation, a store caught up after missing a claim) rewrites the marker, so after it the
// agent compares the metadata with the store again and writes what differs, and writes its
// capture (kubeobjects.go); a new primary, on the other cluster or this one, does the same. The marker is still read every pass
// (epoch.go): the ledger never lets a stale primary write. A store that fails loses its record.
// The ledger lives in memory, so an agent restarted compares with every store once, and every
// record expires after verifyStores (with jitter, so that groups created together do not verify
// together): a store changed behind the agent's back is repaired then.
const verifyStores = 5 * time.Minute

// digest is a SHA-256 of content written to a store; the zero digest is "unknown".
type digest [sha256.Size]byte

// ledger is what each store holds of each group, as this agent last wrote or verified it. A nil
// ledger remembers nothing: every pass compares with the stores.
type ledger struct {
	mu     sync.Mutex
	groups map[types.NamespacedName]*groupRecord
}

// groupRecord is the ledger's entry of one group.
type groupRecord struct {
	// uid tells a group from another of the same name created after it was deleted.
	uid types.UID
	// collected is when the group's objects were last read for a capture.
	collected time.Time
	// captured is what the last capture read, by the fingerprint of its objects.
	captured capturedAs
	// stores are the records by S3 profile name.
	stores map[string]storeRecord
	// restoring is the metadata a promotion read, until its restore completes (promote.go).
	restoring *storedMetadata
	// demoted are the PVCs (by UID) this agent demoted as the group asked, in generation
	// demotedGeneration (demote.go).
	demoted           map[types.UID]bool
	demotedGeneration int64
	// volSyncKeys are the VolSync keys written to or checked against the stores
	// (volsync_keys.go).
	volSyncKeys map[string]volSyncKeyRecord
}

// storeRecord is what one store holds of one group.
type storeRecord struct {
	// target is the store's endpoint and bucket, as the profile named them.
	target string
	// marker and epoch are the version of the group's primary marker in that store and the
	// group's own epoch when the record was made.
	marker string
	epoch  int64
	// metadata is the digest of the group's PV/PVC metadata there, verified until
	// metadataUntil.
	metadata      digest
	metadataUntil time.Time
	// capture is the digest of the group's captured objects there (kubeobjects.go), of the
	// capture taken at captureAt, verified until captureUntil.
	capture      digest
	captureAt    time.Time
	captureUntil time.Time
}

// storeView is what a pass knows of one store before it writes: who it is and the marker it
// read there. A record made under another view is not trusted.
type storeView struct {
	target string
	marker string
	epoch  int64
}

// trusted reports whether a record was made under the same view: the same store, marker
// version and epoch. An empty marker version (none was read, or this pass wrote one) is never
// trusted.
func (s storeRecord) trusted(v storeView) bool {
	return v.marker != "" && s.target == v.target && s.marker == v.marker && s.epoch == v.epoch
}

func newLedger() *ledger {
	return &ledger{groups: map[types.NamespacedName]*groupRecord{}}
}

// group returns the group's record, made anew when the group is new to the ledger. The caller
// holds l.mu.
func (l *ledger) group(vrg *v1alpha1.VolumeReplicationGroup) *groupRecord {
	key := types.NamespacedName{Namespace: vrg.Namespace, Name: vrg.Name}
	g := l.groups[key]
	if g == nil || g.uid != vrg.UID {
		g = &groupRecord{uid: vrg.UID, stores: map[string]storeRecord{}}
		l.groups[key] = g
	}
	return g
}

// store returns the record of a group in a store; the zero record when there is none.
func (l *ledger) store(vrg *v1alpha1.VolumeReplicationGroup, profile string) storeRecord {
	if l == nil {
		return storeRecord{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.group(vrg).stores[profile]
}

// update changes the record of a group in a store. A record made under another view than
// v's starts empty: what it said no longer holds.
func (l *ledger) update(vrg *v1alpha1.VolumeReplicationGroup, profile string, v storeView, change func(*storeRecord)) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.group(vrg)
	rec := g.stores[profile]
	if !rec.trusted(v) {
		rec = storeRecord{target: v.target, marker: v.marker, epoch: v.epoch}
	}
	change(&rec)
	g.stores[profile] = rec
}

// remark keeps trusting what a group's record of a store says after the group itself rewrote the
// store's marker from version from to version to (claimkeys.go: a marker moved to the group's own
// data changes nothing the record describes).
func (l *ledger) remark(vrg *v1alpha1.VolumeReplicationGroup, profile, from, to string) {
	if l == nil || from == "" || to == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.group(vrg)
	if rec, ok := g.stores[profile]; ok && rec.marker == from {
		rec.marker = to
		g.stores[profile] = rec
	}
}

// drop forgets what a store holds of a group: it failed, and the next pass compares again.
func (l *ledger) drop(vrg *v1alpha1.VolumeReplicationGroup, profile string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.group(vrg).stores, profile)
}

// forget removes a group from the ledger (it is deleted).
func (l *ledger) forget(key types.NamespacedName) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.groups, key)
}

// collected returns when the group's objects were last read for a capture (zero: not since the
// agent started).
func (l *ledger) collected(vrg *v1alpha1.VolumeReplicationGroup) time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.group(vrg).collected
}

// setCollected records when the group's objects were read for a capture.
func (l *ledger) setCollected(vrg *v1alpha1.VolumeReplicationGroup, at time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.group(vrg).collected = at
}

// capturedAs is the last capture of a group that the agent read from the API server: the
// fingerprint of its objects in the watch-backed cache when it was taken (zero: none known),
// the digest of its content and what its condition says of it.
type capturedAs struct {
	fingerprint kubeobjects.Fingerprint
	sum         digest
	objects     int
	summary     string
	notServed   []string
	// pending is the capture's document while a store failed to take it (a store down): the
	// next capture, if the fingerprint is unchanged, writes it there without reading the
	// objects again. Nil once every store holds it.
	pending *captureDoc
}

// lastCapture returns the group's last capture read from the API server.
func (l *ledger) lastCapture(vrg *v1alpha1.VolumeReplicationGroup) capturedAs {
	if l == nil {
		return capturedAs{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.group(vrg).captured
}

// setLastCapture records the group's last capture read from the API server.
func (l *ledger) setLastCapture(vrg *v1alpha1.VolumeReplicationGroup, c capturedAs) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.group(vrg).captured = c
}

// verifiedUntil is when a record made now must be verified against its store again.
func verifiedUntil(now time.Time) time.Time {
	return now.Add(verifyStores + rand.N(verifyStores/5)) //nolint:gosec // jitter, not a secret
}

// storedMetadata is the PV and PVC metadata a promotion read from a store, kept while its
// restore waits for the PVCs to bind: the group's primary wrote it before this promotion and no
// one writes it again until the restore completes (the old primary is fenced or demoted, and
// this one protects only then), so reading it at every pass would fetch the same objects again.
// A new generation (another action or state) reads anew.
type storedMetadata struct {
	generation int64
	// store is the profile read and prefix where its marker named the data; unavailable are
	// the profiles skipped before it.
	store, prefix string
	unavailable   []string
	pvs           map[string]*corev1.PersistentVolume
	pvcs          []*corev1.PersistentVolumeClaim
}

// restoreRead returns the metadata the group's promotion read in its current generation; nil
// when it read none yet.
func (l *ledger) restoreRead(vrg *v1alpha1.VolumeReplicationGroup) *storedMetadata {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.group(vrg).restoring; m != nil && m.generation == vrg.Generation {
		return m
	}
	return nil
}

// setRestoreRead records the metadata a promotion read; nil forgets it (the restore completed).
func (l *ledger) setRestoreRead(vrg *v1alpha1.VolumeReplicationGroup, m *storedMetadata) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.group(vrg).restoring = m
}

// demotedAlready reports whether this agent demoted the PVC (by UID) as the group asks in its
// current generation: what a backend's DemotionObserver tells from the storage, for a backend
// that cannot (demote.go).
func (l *ledger) demotedAlready(vrg *v1alpha1.VolumeReplicationGroup, pvc types.UID) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.group(vrg)
	return g.demotedGeneration == vrg.Generation && g.demoted[pvc]
}

// setDemoted records that the PVC (by UID) is demoted as the group asks in its current
// generation; the PVCs recorded for an earlier generation are forgotten.
func (l *ledger) setDemoted(vrg *v1alpha1.VolumeReplicationGroup, pvc types.UID) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.group(vrg)
	if g.demotedGeneration != vrg.Generation || g.demoted == nil {
		g.demoted, g.demotedGeneration = map[types.UID]bool{}, vrg.Generation
	}
	g.demoted[pvc] = true
}
