package vrg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Fencing stale primaries through the stores (DESIGN.md, PVC rule 7). The storage gives no split
// brain signal (csi-addons forces a promotion while the peer is primary and reports it with no
// reason of its own; and any such signal would be symmetric: neither side could tell which one is
// stale) and VolSync has none, so the stores carry the answer: each group's prefix holds a
// marker, primary.json, naming the cluster
// whose primary last claimed the group and its epoch. A promotion claims epoch = max over every
// readable store + 1; the claim is recorded on the group first (an annotation: it cannot be
// re-observed, and an agent restarted mid-promotion must not claim again), then written to
// every store it reaches. Before any write, a primary reads each store's marker (one small GET
// per store per pass): a higher epoch there, or the same epoch claimed by another cluster, means
// this group is a stale primary, and it writes nothing to any store until the hub demotes it; a
// lower or missing epoch is a store that was down during the promotion, and the primary catches
// it up, marker first, then its metadata and a capture.
//
// Every marker write is conditional on the marker read (S3 If-Match on its ETag, If-None-Match: *
// where there was none), so of two primaries claiming or catching up one store at once exactly
// one wins; the other reads the store again and, finding the newer claim, stops. The data
// writes that follow a pass's check are separate objects and not conditional: a stale primary
// that read a store just before the new primary claimed it may still write its metadata once
// more, under its own claim's keys, which no reader reads once the new primary has moved the
// marker to its own (claimkeys.go, docs/design/agent.md).
const (
	// MarkerKey is the key of the primary marker under a group's prefix.
	MarkerKey = "primary.json"
	// AnnotationPrimaryEpoch records the epoch this cluster's group claimed, as JSON
	// ({"epoch":N,"generation":G,"since":T}): G is the generation whose promotion claimed it.
	AnnotationPrimaryEpoch = "drover.io/primary-epoch"
	// MaxEpoch bounds the epochs drover accepts: a marker's epoch must be in [0, MaxEpoch). It is
	// a promotion a second for 34,000 years, so a marker beyond it was forged or damaged; read
	// as it is, epoch MaxInt64 would wrap the next claim negative and leave the group stale
	// forever. Such a marker is refused (objectstore.KindRefused) and its store is left out of
	// the pass, as one that cannot be read.
	MaxEpoch int64 = 1 << 40
)

// PrimaryMarker is the object at <prefix>primary.json: the cluster whose primary holds the
// group, the epoch of its claim and when it claimed it.
type PrimaryMarker struct {
	Cluster string      `json:"cluster"`
	Epoch   int64       `json:"epoch"`
	Since   metav1.Time `json:"since"`
	// Data is where the group's newest whole data set is, under the group's prefix
	// (claimkeys.go): claims/<epoch>-<cluster>/ of the claim that wrote it, or "" for the
	// group's prefix itself (data written before keys per claim, or none yet). A claim keeps
	// it; the claim's holder moves it to its own once it has written its data there.
	Data string `json:"data,omitempty"`
}

// epochClaim is the value of AnnotationPrimaryEpoch.
type epochClaim struct {
	Epoch      int64       `json:"epoch"`
	Generation int64       `json:"generation"`
	Since      metav1.Time `json:"since"`
}

// storeMarker is what reading one store's marker returned.
type storeMarker struct {
	name  string
	store objectstore.Store
	// marker is nil when the store holds none.
	marker *PrimaryMarker
	// version is the marker's ETag as read ("" when there is none): a marker written over it
	// is written only if the store still holds that version.
	version string
	// err is set when the store could not be read (or its marker decoded).
	err error
	// oldKey is true when the marker is sealed under a store key that is no longer the current
	// one (a key was rotated since it was written).
	oldKey bool
}

// epochState is what the fence decided in one pass; nil when it did not run (a secondary).
type epochState struct {
	own PrimaryMarker
	// stale, when set, is the newer claim found and the store holding it: nothing is written.
	stale      *PrimaryMarker
	staleStore string
	// failed are the stores whose marker could not be read or caught up, with the error; no
	// data is written to them this pass.
	failed map[string]error
	// caughtUp are the stores whose marker named an older epoch and was rewritten this pass:
	// they hold an older primary's data, which this pass replaces. (A store without a marker
	// gets one too, but is not listed: it is new to this group, or missed its first claim.)
	// A store whose marker was this group's own, sealed under a store key no longer current,
	// is listed too: its marker is resealed, and its metadata and capture are rewritten this
	// pass under the current key, so that the older key can be retired.
	caughtUp []string
	// newest is true when every store was read and none holds a newer claim: this group is
	// the newest primary, proven by the stores.
	newest bool
	// versions are the marker versions read this pass, by store; a store whose marker this
	// pass wrote (or that holds none) has "". The ledger trusts what it knows of a store only
	// under the same version (ledger.go).
	versions map[string]string
	// prefixes are where the group's data is in each store read, as its marker names it
	// (claimkeys.go): after a catch-up, the own claim's prefix.
	prefixes map[string]string
}

// prefix is where the store's marker names the group's data, as read this pass: what a restore
// reads there, and where a relocation's final capture goes, for its successor to read.
func (e *epochState) prefix(vrg *v1alpha1.VolumeReplicationGroup, store string) string {
	if e != nil {
		if p, ok := e.prefixes[store]; ok {
			return p
		}
	}
	return StorePrefix(vrg)
}

// ownPrefix is where the group writes its data: under its own claim's prefix (the group's
// prefix when the fence did not run).
func (e *epochState) ownPrefix(vrg *v1alpha1.VolumeReplicationGroup) string {
	if e == nil {
		return StorePrefix(vrg)
	}
	return StorePrefix(vrg) + claimDir(e.own)
}

// view is what this pass knows of a store for the ledger: a nil state (the fence did not run)
// gives a view no record is trusted under.
func (e *epochState) view(profile v1alpha1.S3Profile) storeView {
	if e == nil {
		return storeView{}
	}
	return storeView{target: profile.Endpoint + " " + profile.Bucket, marker: e.versions[profile.Name], epoch: e.own.Epoch}
}

// isStale reports whether the group must write nothing because a newer primary claimed it.
func (e *epochState) isStale() bool { return e != nil && e.stale != nil }

// provenNewest reports whether every store was read and none holds a newer claim.
func (e *epochState) provenNewest() bool { return e != nil && e.stale == nil && e.newest }

// writable returns nil when data may be written to a store this pass, else why not.
func (e *epochState) writable(store string) error {
	if e == nil {
		return nil
	}
	return e.failed[store]
}

// nextEpoch is one more than the highest epoch in the readable stores; ok is false when no
// store could be read, and then no epoch can be claimed.
func nextEpoch(markers []storeMarker) (epoch int64, ok bool) {
	for _, m := range markers {
		if m.err != nil {
			continue
		}
		ok = true
		if m.marker != nil && m.marker.Epoch > epoch {
			epoch = m.marker.Epoch
		}
	}
	if epoch >= MaxEpoch-1 {
		// Unreachable through ReadMarkerVersion, which refuses such markers; checked here so
		// that no sum can overflow.
		return 0, false
	}
	return epoch + 1, ok
}

// needsClaim reports whether the group claims a new epoch this pass: a promotion (a primary with
// action Failover or Relocate whose restore is not complete) that has not claimed for its
// generation, or a first protection: a primary that never claimed, and whose readable stores
// hold no marker.
func needsClaim(vrg *v1alpha1.VolumeReplicationGroup, claim *epochClaim, markers []storeMarker) bool {
	if promoting(vrg) && !restoreCompleted(vrg) {
		return claim == nil || claim.Generation != vrg.Generation
	}
	if claim != nil {
		return false
	}
	for _, m := range markers {
		if m.err == nil && m.marker != nil {
			return false
		}
	}
	return true
}

// judgeEpoch compares the group's own claim with every store's marker. A store whose marker is
// newer, or of the same epoch but another cluster (two promotions that could not see each
// other's stores: both stop, as for a split brain), makes the group stale; a store whose marker
// is older or missing is lagging and is to be caught up.
func judgeEpoch(group string, own PrimaryMarker, markers []storeMarker) (state *epochState, lagging []storeMarker) {
	state = &epochState{own: own, failed: map[string]error{}, newest: true, versions: map[string]string{}, prefixes: map[string]string{}}
	for _, m := range markers {
		if m.err == nil {
			state.versions[m.name] = m.version
			state.prefixes[m.name] = ClaimPrefix(group, m.marker)
		}
		switch {
		case m.err != nil:
			state.failed[m.name] = m.err
			state.newest = false
		case m.marker == nil || m.marker.Epoch < own.Epoch:
			lagging = append(lagging, m)
		case m.marker.Epoch > own.Epoch || m.marker.Cluster != own.Cluster:
			if state.stale == nil || m.marker.Epoch > state.stale.Epoch {
				state.stale, state.staleStore = m.marker, m.name
			}
		case m.oldKey && own.Epoch > 0:
			// The group's own marker, sealed under a key rotated since: rewritten like a
			// lagging one, which seals it under the current key.
			lagging = append(lagging, m)
		}
	}
	return state, lagging
}

// fenceStores is the primary's phase before the restore and any write to a store: it claims an
// epoch when the group is promoted (or first protected), reads every store's marker, and
// decides whether this group is a stale primary (sc.epoch); a lagging store gets its marker.
func (r *Reconciler) fenceStores(ctx context.Context, sc *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	markers := r.readMarkers(ctx, sc)
	claim, err := epochClaimOf(sc.vrg)
	if err != nil {
		return ctrl.Result{}, err
	}
	if needsClaim(sc.vrg, claim, markers) {
		epoch, ok := nextEpoch(markers)
		if !ok {
			// Nothing can be written anyway: every store failed, and each is reported.
			sc.epoch, _ = judgeEpoch(StorePrefix(sc.vrg), PrimaryMarker{Cluster: r.ClusterName}, markers)
			return ctrl.Result{}, fmt.Errorf("failed to claim VolumeReplicationGroup %s as primary: no S3 profile could be read", klog.KObj(sc.vrg))
		}
		claim = &epochClaim{Epoch: epoch, Generation: sc.vrg.Generation, Since: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
		value, err := json.Marshal(claim)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to encode the epoch of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
		}
		// Recorded on the group before any store holds it: a restarted agent finds its claim
		// and does not claim again.
		if err := r.annotate(ctx, sc, AnnotationPrimaryEpoch, string(value)); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("Claimed the group as primary", "epoch", epoch)
	}
	own := PrimaryMarker{Cluster: r.ClusterName}
	if claim != nil {
		own.Epoch, own.Since = claim.Epoch, claim.Since
	}
	state, lagging := judgeEpoch(StorePrefix(sc.vrg), own, markers)
	sc.epoch = state
	if !state.isStale() && own.Epoch > 0 {
		// A group that never claimed has nothing to catch up with.
		r.catchUp(ctx, sc, state, lagging)
	}
	if state.isStale() {
		log.Info("Not writing to the S3 profiles: a newer primary holds the group",
			"holder", state.stale.Cluster, "epoch", state.stale.Epoch, "ownEpoch", own.Epoch, "store", state.staleStore)
		return ctrl.Result{RequeueAfter: requeueAfterFailure}, nil
	}
	return ctrl.Result{}, nil
}

// catchUp writes the group's marker to every lagging store, each write conditional on the
// marker read there. A store whose marker changed since (another primary claimed it at the
// same moment) is read again: a newer claim there makes the group stale, anything else leaves
// the store out of this pass.
func (r *Reconciler) catchUp(ctx context.Context, sc *scope, state *epochState, lagging []storeMarker) {
	log := ctrl.LoggerFrom(ctx)
	prefix := StorePrefix(sc.vrg)
	for _, m := range lagging {
		// Whatever happens, the marker is not the version read: nothing known of the store
		// before this pass is trusted (ledger.go).
		state.versions[m.name] = ""
		// The marker keeps naming the data it named (claimkeys.go).
		written := state.own
		if m.marker != nil {
			written.Data = m.marker.Data
		}
		err := PutMarker(ctx, m.store, prefix, written, m.version)
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			log.Info("Another primary wrote the group's marker at the same time; reading it again", "store", m.name)
			again := storeMarker{name: m.name, store: m.store}
			again.marker, again.version, again.err = ReadMarkerVersion(ctx, m.store, prefix)
			if again.err == nil && again.marker != nil && again.marker.Cluster == state.own.Cluster && again.marker.Epoch == state.own.Epoch {
				// Our own write, applied though its answer was lost (the retry found it done).
				err = nil
			} else if rejudged, _ := judgeEpoch(prefix, state.own, []storeMarker{again}); rejudged.isStale() {
				if state.stale == nil || rejudged.stale.Epoch > state.stale.Epoch {
					state.stale, state.staleStore = rejudged.stale, m.name
				}
				continue
			}
		}
		if err != nil {
			state.failed[m.name] = err
			state.newest = false
			continue
		}
		switch {
		case m.marker != nil && m.marker.Epoch == state.own.Epoch && m.marker.Cluster == state.own.Cluster:
			// The group's own marker, resealed under the current store key: the metadata phase
			// compares and rewrites what is sealed under the older key, and caughtUp has the
			// capture written at once.
			state.caughtUp = append(state.caughtUp, m.name)
			log.Info("Resealed the group's marker under the current store key", "store", m.name, "epoch", state.own.Epoch)
		case m.marker != nil:
			// The store holds an older primary's claim, and so its data: the metadata phase
			// rewrites that, and caughtUp has the capture written at once.
			state.caughtUp = append(state.caughtUp, m.name)
			log.Info("Caught up an S3 profile that missed the group's claim", "store", m.name, "from", m.marker.Epoch, "epoch", state.own.Epoch)
		}
	}
}

// PutMarker writes a group's primary marker to a store if the store still holds the marker
// version read before ("" when it held none): of several primaries writing at once, one wins
// and the others fail with objectstore.ErrPreconditionFailed.
func PutMarker(ctx context.Context, store objectstore.Store, prefix string, m PrimaryMarker, version string) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("failed to encode the primary marker %s%s: %w", prefix, MarkerKey, err)
	}
	return store.PutIf(ctx, prefix+MarkerKey, body, version)
}

// readMarkers reads the marker of every S3 profile of the group, in spec order.
func (r *Reconciler) readMarkers(ctx context.Context, sc *scope) []storeMarker {
	out := make([]storeMarker, 0, len(sc.vrg.Spec.S3Profiles))
	for _, profile := range sc.vrg.Spec.S3Profiles {
		m := storeMarker{name: profile.Name}
		m.store, m.err = r.storeOf(ctx, sc, profile)
		if m.err == nil {
			var current bool
			m.marker, m.version, current, m.err = readMarker(ctx, m.store, StorePrefix(sc.vrg))
			m.oldKey = m.marker != nil && !current
		}
		out = append(out, m)
	}
	return out
}

// ReadMarker reads the primary marker under a group's prefix; nil when there is none.
func ReadMarker(ctx context.Context, store objectstore.Store, prefix string) (*PrimaryMarker, error) {
	m, _, err := ReadMarkerVersion(ctx, store, prefix)
	return m, err
}

// ReadMarkerVersion reads the primary marker under a group's prefix and its version, for a
// conditional write over it; nil and "" when there is none.
func ReadMarkerVersion(ctx context.Context, store objectstore.Store, prefix string) (*PrimaryMarker, string, error) {
	m, version, _, err := readMarker(ctx, store, prefix)
	return m, version, err
}

// readMarker is ReadMarkerVersion, and whether the marker is sealed under the store's current
// key (objectstore.GetVersionCurrent).
func readMarker(ctx context.Context, store objectstore.Store, prefix string) (*PrimaryMarker, string, bool, error) {
	body, version, current, err := objectstore.GetVersionCurrent(ctx, store, prefix+MarkerKey)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	m := &PrimaryMarker{}
	if err := json.Unmarshal(body, m); err != nil {
		return nil, "", false, fmt.Errorf("S3 profile %s: the primary marker %s%s cannot be decoded: %w", store.Name(), prefix, MarkerKey, err)
	}
	if err := checkMarker(m); err != nil {
		return nil, "", false, objectstore.Refused(store.Name(), prefix+MarkerKey, err)
	}
	return m, version, current, nil
}

// epochClaimOf reads the group's claim; nil when it never claimed.
func epochClaimOf(vrg *v1alpha1.VolumeReplicationGroup) (*epochClaim, error) {
	value, ok := vrg.Annotations[AnnotationPrimaryEpoch]
	if !ok || value == "" {
		return nil, nil
	}
	c := &epochClaim{}
	if err := json.Unmarshal([]byte(value), c); err != nil {
		// Only a person can have written it: a claim is never guessed, since a wrong one
		// could let a stale primary write.
		return nil, fmt.Errorf("failed to decode annotation %s of VolumeReplicationGroup %s (%q): %w; remove it to claim anew",
			AnnotationPrimaryEpoch, klog.KObj(vrg), value, err)
	}
	return c, nil
}

// staleCondition is ClusterDataProtected of a stale primary: nothing is written to any store.
// When its storage still reports PVCs primary here (primaries), both clusters hold writable
// primaries of the group: a split brain. The storage never says so (csi-addons forces a
// promotion while the peer is primary, and reports no reason for it); the stores' epochs say
// that the peer was promoted after this group, and the VolumeReplications that this cluster's
// volumes are still primary.
func staleCondition(e *epochState, primaries []string) metav1.Condition {
	if len(primaries) == 0 {
		return condition(v1alpha1.ConditionClusterDataProtected, false, v1alpha1.ReasonStalePrimary, staleMessage(e))
	}
	return condition(v1alpha1.ConditionClusterDataProtected, false, v1alpha1.ReasonSplitBrain, fmt.Sprintf(
		"split brain: the storage reports PVCs %s primary (writable) here, and cluster %s was promoted after this group: both clusters may hold writable primaries, and what the application writes here is discarded when this group is demoted. %s",
		strings.Join(primaries, ", "), e.stale.Cluster, staleMessage(e)))
}

func staleMessage(e *epochState) string {
	own := "no epoch"
	if e.own.Epoch > 0 {
		own = "epoch " + strconv.FormatInt(e.own.Epoch, 10)
	}
	return fmt.Sprintf("this cluster is a stale primary: cluster %s holds the group with epoch %d (claimed %s, read from S3 profile %s), this group has %s; "+
		"nothing is written to any S3 profile, so the new primary's metadata and objects are kept. The hub demotes this group when it reaches it; "+
		"if this cluster must be primary instead, fail over or relocate to it",
		e.stale.Cluster, e.stale.Epoch, e.stale.Since.UTC().Format(time.RFC3339), e.staleStore, own)
}

// caughtUpStores are the stores that held an older primary's claim until this pass.
func (e *epochState) caughtUpStores() []string {
	if e == nil {
		return nil
	}
	return e.caughtUp
}

// staleDemotion reports, for a relocation's demoting group about to write its final capture,
// whether a newer primary already holds the group: then the capture is not written (it would
// overwrite the newer primary's) and the demotion goes on. It claims nothing and catches up
// nothing; sc.epoch keeps the stores whose marker could not be read out of the capture.
func (r *Reconciler) staleDemotion(ctx context.Context, sc *scope) bool {
	own := PrimaryMarker{Cluster: r.ClusterName}
	claim, err := epochClaimOf(sc.vrg)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Not writing the final capture")
		return true
	}
	if claim != nil {
		own.Epoch, own.Since = claim.Epoch, claim.Since
	}
	// A group that never claimed (epoch 0) is stale as soon as any store holds a marker.
	sc.epoch, _ = judgeEpoch(StorePrefix(sc.vrg), own, r.readMarkers(ctx, sc))
	if sc.epoch.isStale() {
		ctrl.LoggerFrom(ctx).Info("Not writing the final capture: a newer primary holds the group",
			"holder", sc.epoch.stale.Cluster, "epoch", sc.epoch.stale.Epoch)
		return true
	}
	return false
}
