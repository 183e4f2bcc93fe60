package vrg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Keys per claim (docs/reliability.md, "Stale primaries"). A primary writes its metadata and
// capture under the prefix of its own claim, <namespace>/<name>/claims/<epoch>-<cluster>/, and
// the marker names where the group's newest whole data set is (PrimaryMarker.Data): every reader
// (a restore, a drill) reads the marker, then there. A claim keeps the marker naming the data it
// named, so the new primary restores what the old one wrote; once the new primary has written
// its own metadata (and capture) under its claim, it moves the marker to name them
// (pointStores), then removes what older claims left.
//
// The data writes that follow a pass's check of the marker cannot be conditional on it (S3
// cannot make a write to one key depend on another key's version), so a stale primary that read
// the marker just before a newer primary claimed the store can still write once more: with keys
// per claim, that write lands under its own, older claim, which no reader reads once the newer
// primary has moved the marker, and which that primary removes. Before the move, the newer
// primary has written nothing of its own, and a reader reads the older claim's data, late write
// included, as it did before the claim.
const claimsDir = "claims/"

// claimDir is the directory of a claim's data under a group's prefix.
func claimDir(m PrimaryMarker) string {
	return claimsDir + strconv.FormatInt(m.Epoch, 10) + "-" + m.Cluster + "/"
}

// ClaimPrefix is where the data a marker names is, under a group's prefix: the group's prefix
// itself for no marker, or one that names none (data from before keys per claim).
func ClaimPrefix(group string, m *PrimaryMarker) string {
	if m == nil {
		return group
	}
	return group + m.Data
}

// DataPrefix reads a group's marker in a store and returns the prefix its metadata and capture
// are to be read from.
func DataPrefix(ctx context.Context, store objectstore.Store, vrg *v1alpha1.VolumeReplicationGroup) (string, error) {
	m, err := ReadMarker(ctx, store, StorePrefix(vrg))
	if err != nil {
		return "", err
	}
	return ClaimPrefix(StorePrefix(vrg), m), nil
}

// checkMarker refuses a marker that no drover wrote: an epoch outside [0, MaxEpoch) (read as
// it is, MaxInt64 would wrap the next claim negative and leave the group stale forever), a
// cluster that is not a DNS subdomain, or data named elsewhere than a claim's directory of at
// most the marker's epoch.
func checkMarker(m *PrimaryMarker) error {
	switch {
	case m.Epoch < 0 || m.Epoch >= MaxEpoch:
		return fmt.Errorf("its epoch %d is outside [0, %d): no group is promoted that often, so the marker was not written by drover", m.Epoch, MaxEpoch)
	case len(validation.IsDNS1123Subdomain(m.Cluster)) > 0:
		return fmt.Errorf("its cluster %q is not a cluster's name", m.Cluster)
	case m.Data == "":
		return nil
	}
	epoch, cluster, ok := parseClaimDir(m.Data)
	if !ok || epoch > m.Epoch || len(validation.IsDNS1123Subdomain(cluster)) > 0 || claimDir(PrimaryMarker{Epoch: epoch, Cluster: cluster}) != m.Data {
		return fmt.Errorf("it names the data %q, which is not the directory of a claim up to its own", m.Data)
	}
	return nil
}

// parseClaimDir reads claims/<epoch>-<cluster>/ and anything after it.
func parseClaimDir(rest string) (epoch int64, cluster string, ok bool) {
	claim, ok := strings.CutPrefix(rest, claimsDir)
	if !ok {
		return 0, "", false
	}
	dir, _, ok := strings.Cut(claim, "/")
	if !ok {
		return 0, "", false
	}
	digits, cluster, ok := strings.Cut(dir, "-")
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, cluster, ok && err == nil && n >= 0
}

// olderData reports whether a key under a group's prefix is data of a claim older than own, or
// from before keys per claim. A newer claim's data, and another claim of the same epoch, are
// never older: a newer primary may be writing under its claim before it moves the marker.
func olderData(group, key string, own PrimaryMarker) bool {
	rest, ok := strings.CutPrefix(key, group)
	if !ok || rest == MarkerKey {
		return false
	}
	if strings.HasPrefix(rest, volSyncKeysDir) {
		// The VolSync keys are the group's, whichever claim holds it (volsync_keys.go).
		return false
	}
	if !strings.HasPrefix(rest, claimsDir) {
		return true
	}
	epoch, _, ok := parseClaimDir(rest)
	return ok && epoch < own.Epoch
}

// removeOlderClaims deletes what a store holds of a group under older claims and from before
// keys per claim: what earlier primaries wrote, and any late write of a stale one. Only a
// group whose claim the store's marker names calls it.
func removeOlderClaims(ctx context.Context, store objectstore.Store, group string, own PrimaryMarker) (removed int, err error) {
	keys, err := store.List(ctx, group)
	if err != nil {
		return 0, err
	}
	for _, key := range keys {
		if !olderData(group, key, own) {
			continue
		}
		if err := store.Delete(ctx, key); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

// pointStores, after the primary wrote its metadata and capture, moves each store's marker to
// name the data under the group's own claim, where the metadata phase wrote this pass and the
// capture phase wrote under this claim; then it removes what older claims left there.
func (r *Reconciler) pointStores(ctx context.Context, sc *scope) (ctrl.Result, error) {
	e := sc.epoch
	if e == nil || e.isStale() || e.own.Epoch == 0 {
		return ctrl.Result{}, nil
	}
	var errs []error
	for _, profile := range sc.vrg.Spec.S3Profiles {
		if e.prefix(sc.vrg, profile.Name) == e.ownPrefix(sc.vrg) || !r.ownDataWritten(sc, profile.Name) {
			continue
		}
		if err := r.pointStore(ctx, sc, profile); err != nil {
			errs = append(errs, fmt.Errorf("failed to name the group's own data in the marker of S3 profile %s: %w", profile.Name, err))
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// ownDataWritten reports whether a store holds the group's data under its own claim: its
// metadata written this pass and, for a group that protects its objects, a capture written
// under this claim.
func (r *Reconciler) ownDataWritten(sc *scope, store string) bool {
	wrote := false
	for _, o := range sc.stores {
		if o.name == store {
			wrote = o.err == nil
		}
	}
	if !wrote || sc.vrg.Spec.KubeObjectProtection == nil {
		return wrote
	}
	rec := r.written.store(sc.vrg, store)
	return rec.capture != digest{} && rec.epoch == sc.epoch.own.Epoch
}

// pointStore moves one store's marker to the own claim's data, if the store still holds the own
// claim: the metadata of PVCs kept but not written again comes along from where the marker named
// it; then what older claims left goes.
func (r *Reconciler) pointStore(ctx context.Context, sc *scope, profile v1alpha1.S3Profile) error {
	store, err := r.storeOf(ctx, sc, profile)
	if err != nil {
		return err
	}
	group, own := StorePrefix(sc.vrg), sc.epoch.own
	m, version, err := ReadMarkerVersion(ctx, store, group)
	if err != nil || m == nil || m.Epoch != own.Epoch || m.Cluster != own.Cluster {
		// A newer claim since (the next pass finds it) or a marker gone (the next pass writes it).
		return err
	}
	if err := copyKept(ctx, store, ClaimPrefix(group, m), group+claimDir(own), sc.keptOnly); err != nil {
		return err
	}
	moved := own
	moved.Data = claimDir(own)
	if err := PutMarker(ctx, store, group, moved, version); err != nil {
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			return nil
		}
		return err
	}
	sc.epoch.prefixes[profile.Name] = group + moved.Data
	if _, now, err := ReadMarkerVersion(ctx, store, group); err == nil {
		r.written.remark(sc.vrg, profile.Name, version, now)
		sc.epoch.versions[profile.Name] = now
	}
	removed, err := removeOlderClaims(ctx, store, group, own)
	ctrl.LoggerFrom(ctx).Info("The marker names the group's data under its own claim", "store", profile.Name,
		"data", moved.Data, "was", m.Data, "olderObjectsRemoved", removed)
	return err
}

// copyKept copies into the own claim's prefix the metadata of PVCs kept but not written this
// pass (keys under to) that the own claim lacks, from where the marker named the data. An object
// the store refuses is not copied: no restore would use it. A store that cannot say whether the
// own claim holds a key stops the move, which the next pass tries again.
func copyKept(ctx context.Context, store objectstore.Store, from, to string, kept []string) error {
	for _, key := range kept {
		rel, ok := strings.CutPrefix(key, to)
		if !ok {
			continue
		}
		switch _, err := store.Get(ctx, key); {
		case err == nil || errors.Is(err, objectstore.ErrRefused):
			continue // the own claim holds it
		case !errors.Is(err, objectstore.ErrNotFound):
			return err // unknown: the marker must not move without it
		}
		body, err := store.Get(ctx, from+rel)
		switch {
		case errors.Is(err, objectstore.ErrNotFound) || errors.Is(err, objectstore.ErrRefused):
			continue
		case err != nil:
			return err
		}
		if err := store.Put(ctx, key, body); err != nil {
			return err
		}
	}
	return nil
}
