package vrg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Keys of the metadata in a store, under the group's prefix <namespace>/<name>/:
// pvs/<pv>.json and pvcs/<pvc namespace>/<pvc>.json.
const (
	pvsDir  = "pvs/"
	pvcsDir = "pvcs/"
)

// annotationsNotStored are annotations that describe the binding on this cluster. A restored PV
// and PVC are bound anew by the PV controller, which writes its own.
var annotationsNotStored = []string{
	"pv.kubernetes.io/bind-completed",
	"pv.kubernetes.io/bound-by-controller",
	"volume.kubernetes.io/selected-node",
}

// StorePrefix is the key prefix of a group's objects in every store.
func StorePrefix(vrg *v1alpha1.VolumeReplicationGroup) string {
	return vrg.Namespace + "/" + vrg.Name + "/"
}

// PVKey is the key of a PV's metadata under a group's prefix.
func PVKey(prefix, pv string) string { return prefix + pvsDir + pv + ".json" }

// PVCKey is the key of a PVC's metadata under a group's prefix.
func PVCKey(prefix, ns, name string) string { return prefix + pvcsDir + ns + "/" + name + ".json" }

// cleanObjectMeta keeps what identifies an object on any cluster: name, namespace, labels and
// annotations (less binding annotations and drover's own protection label).
func cleanObjectMeta(in metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: in.Name, Namespace: in.Namespace}
	for k, v := range in.Labels {
		if k == LabelProtectedBy || k == LabelProtectedByNamespace {
			continue
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k] = v
	}
	for k, v := range in.Annotations {
		if slices.Contains(annotationsNotStored, k) {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

// CleanPV returns the PV as stored: its spec, with a claimRef that names the claim but not its
// uid or resourceVersion, and metadata without anything specific to this cluster (uid,
// resourceVersion, creationTimestamp, managedFields, finalizers, owners, binding annotations).
// The original reclaim policy annotation is kept: the peer needs it to unprotect a restored PV.
func CleanPV(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	out := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: cleanObjectMeta(pv.ObjectMeta),
		Spec:       *pv.Spec.DeepCopy(),
	}
	if ref := out.Spec.ClaimRef; ref != nil {
		ref.UID, ref.ResourceVersion = "", ""
	}
	return out
}

// CleanPVC returns the PVC as stored: its spec (volumeName included, so a restored PVC binds to
// the restored PV) and metadata without anything specific to this cluster.
func CleanPVC(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: cleanObjectMeta(pvc.ObjectMeta),
		Spec:       *pvc.Spec.DeepCopy(),
	}
}

// metadataObjects returns the objects to store, by key, and the keys to keep: those of every
// PVC of the group, written now or earlier. (A deleted PVC is in the group only while a
// relocation still needs it; its metadata stays for the peer's restore.) It fills
// sc.metadataPending.
func metadataObjects(sc *scope) (objects map[string][]byte, keep map[string]bool, err error) {
	prefix := sc.epoch.ownPrefix(sc.vrg)
	objects, keep = map[string][]byte{}, map[string]bool{}
	for _, ps := range sc.pvcs {
		pvcKey := PVCKey(prefix, ps.pvc.Namespace, ps.pvc.Name)
		keep[pvcKey] = true
		if ps.pvc.Spec.VolumeName != "" {
			keep[PVKey(prefix, ps.pvc.Spec.VolumeName)] = true
		}
		if !ps.writeMetadata {
			if ps.result.Reason == v1alpha1.ReasonPVCNotBound {
				sc.metadataPending = append(sc.metadataPending, ps.key())
			}
			continue
		}
		pvBody, err := json.Marshal(CleanPV(ps.pv))
		if err != nil {
			return nil, nil, fmt.Errorf("failed to encode PV %s: %w", ps.pv.Name, err)
		}
		pvcBody, err := json.Marshal(CleanPVC(ps.pvc))
		if err != nil {
			return nil, nil, fmt.Errorf("failed to encode PVC %s: %w", ps.key(), err)
		}
		objects[PVKey(prefix, ps.pv.Name)] = pvBody
		objects[pvcKey] = pvcBody
	}
	sc.keptOnly = nil
	for key := range keep {
		if _, written := objects[key]; !written {
			sc.keptOnly = append(sc.keptOnly, key)
		}
	}
	return objects, keep, nil
}

// protectMetadata writes the PV and PVC metadata to every S3 profile of the group and removes
// the metadata of PVCs no longer selected. A store that fails is reported and retried; the
// others are still written, so the loss of one store loses nothing.
func (r *Reconciler) protectMetadata(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.epoch.isStale() {
		// A newer primary holds the group (epoch.go): nothing is written to any store.
		return ctrl.Result{}, nil
	}
	if sc.restore != nil && !sc.restore.complete() {
		// The stores hold the peer's metadata, which the unfinished restore still reads; this
		// cluster's PVCs are not the whole group yet, and writing them would delete the rest.
		sc.metadataDeferred = true
		return ctrl.Result{}, nil
	}
	objects, keep, err := metadataObjects(sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	sc.metadataObjects = len(objects)
	sum := metadataDigest(objects, keep)
	var errs []error
	for _, profile := range sc.vrg.Spec.S3Profiles {
		err := r.writeMetadata(ctx, sc, profile, objects, keep, sum)
		sc.stores = append(sc.stores, storeOutcome{name: profile.Name, err: err})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// writeMetadata makes one store hold the group's metadata. A store that the ledger says holds
// this very content, under the marker read this pass, is neither read nor written; any other is
// compared object by object and written where it differs (SyncObjects).
func (r *Reconciler) writeMetadata(ctx context.Context, sc *scope, profile v1alpha1.S3Profile, objects map[string][]byte, keep map[string]bool, sum digest) error {
	// A store whose marker could not be read is not written this pass.
	if err := sc.epoch.writable(profile.Name); err != nil {
		return err
	}
	view, now := sc.epoch.view(profile), time.Now()
	if rec := r.written.store(sc.vrg, profile.Name); rec.trusted(view) && rec.metadata == sum && now.Before(rec.metadataUntil) {
		return nil
	}
	store, err := r.storeOf(ctx, sc, profile)
	if err == nil {
		err = SyncObjects(ctx, store, sc.epoch.ownPrefix(sc.vrg), objects, keep)
	}
	if err == nil && sc.epoch != nil && sc.epoch.own.Epoch > 0 && sc.epoch.prefix(sc.vrg, profile.Name) == sc.epoch.ownPrefix(sc.vrg) {
		// What older claims left, and any late write of a stale primary, go at each check
		// (claimkeys.go).
		var removed int
		removed, err = removeOlderClaims(ctx, store, StorePrefix(sc.vrg), sc.epoch.own)
		if removed > 0 {
			ctrl.LoggerFrom(ctx).Info("Removed the data of older claims from the S3 profile", "store", profile.Name, "objects", removed)
		}
	}
	if err != nil {
		r.written.drop(sc.vrg, profile.Name)
		return err
	}
	r.written.update(sc.vrg, profile.Name, view, func(rec *storeRecord) {
		rec.metadata, rec.metadataUntil = sum, verifiedUntil(now)
	})
	return nil
}

// metadataDigest is the digest of what SyncObjects makes a store hold: the objects and the keys
// kept.
func metadataDigest(objects map[string][]byte, keep map[string]bool) digest {
	h := sha256.New()
	for _, key := range slices.Sorted(maps.Keys(objects)) {
		fmt.Fprintf(h, "%s\x00%d\x00", key, len(objects[key]))
		h.Write(objects[key])
	}
	for _, key := range slices.Sorted(maps.Keys(keep)) {
		fmt.Fprintf(h, "keep\x00%s\x00", key)
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// store builds the Store of an S3 profile from the spec and its credentials Secret, read on
// the agent's cluster; a store built before is reused while its Secret is unchanged (stores.go).
func (r *Reconciler) store(ctx context.Context, profile v1alpha1.S3Profile) (objectstore.Store, error) {
	ref := profile.SecretRef
	if s := r.stores.get(profile, r.secretVersion(ctx, ref)); s != nil {
		return s, nil
	}
	store, version, err := openStore(ctx, r.APIReader, profile, r.NewStore, r.StoreLimits)
	if err != nil {
		return nil, err
	}
	counted := r.Metrics.countWrites(store)
	r.stores.put(profile, version, counted)
	return counted, nil
}

// OpenStore builds the store of an S3 profile from its credentials Secret, read with reader,
// as the reconciler does but uncached: for readers of a group's stores besides it (the drill).
func OpenStore(ctx context.Context, reader client.Reader, profile v1alpha1.S3Profile, newStore StoreFactory, limits StoreLimits) (objectstore.Store, error) {
	store, _, err := openStore(ctx, reader, profile, newStore, limits)
	return store, err
}

// openStore builds the store of an S3 profile and returns the resourceVersion of the Secret it
// was built from.
func openStore(ctx context.Context, reader client.Reader, profile v1alpha1.S3Profile, newStore StoreFactory, limits StoreLimits) (objectstore.Store, string, error) {
	ref := profile.SecretRef
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", &objectstore.Error{
				Kind: objectstore.KindInvalidProfile, Profile: profile.Name, Secret: ref.Namespace + "/" + ref.Name,
				Err: fmt.Errorf("its credentials Secret %s/%s does not exist on this cluster: create it with keys %s and %s",
					ref.Namespace, ref.Name, objectstore.SecretAccessKeyIDKey, objectstore.SecretSecretAccessKeyKey),
			}
		}
		return nil, "", fmt.Errorf("failed to get Secret %s/%s of S3 profile %s: %w", ref.Namespace, ref.Name, profile.Name, err)
	}
	p, err := objectstore.ProfileFromSpec(profile, secret)
	if err != nil {
		return nil, "", err
	}
	p.Limits = limits.objectstoreLimits()
	store, err := newStore(p)
	if err != nil {
		return nil, "", err
	}
	return store, secret.ResourceVersion, nil
}

// storeOf is store, built once per pass: the first call reads the profile's credentials Secret,
// the others of the same pass reuse the store (or its error).
func (r *Reconciler) storeOf(ctx context.Context, sc *scope, profile v1alpha1.S3Profile) (objectstore.Store, error) {
	if b, ok := sc.built[profile.Name]; ok {
		return b.store, b.err
	}
	store, err := r.store(ctx, profile)
	if sc.built == nil {
		sc.built = map[string]builtStore{}
	}
	sc.built[profile.Name] = builtStore{store: store, err: err}
	return store, err
}

// SyncObjects makes the store hold objects under prefix: an object whose stored bytes are equal
// is not written again (one that the store refuses to give, objectstore.ErrRefused, is written
// over, and so is one sealed under a store key that is no longer the current one, after a
// rotation) (a Get instead of a Put, so a steady group rewrites nothing and object
// timestamps tell when metadata last changed), and an object under prefix's pvs/ and pvcs/ that
// is neither written nor in keep is deleted. It stops at the first failure: a store that is down
// fails every call alike.
func SyncObjects(ctx context.Context, store objectstore.Store, prefix string, objects map[string][]byte, keep map[string]bool) error {
	for _, key := range slices.Sorted(maps.Keys(objects)) {
		stored, current, err := objectstore.GetCurrent(ctx, store, key)
		switch {
		case err == nil && current && bytes.Equal(stored, objects[key]):
			continue
		case err != nil && !errors.Is(err, objectstore.ErrNotFound) && !errors.Is(err, objectstore.ErrRefused):
			// An object refused (altered, unsealed, too large) is this group's to rewrite.
			return err
		}
		if err := store.Put(ctx, key, objects[key]); err != nil {
			return err
		}
	}
	for _, dir := range []string{pvsDir, pvcsDir} {
		keys, err := store.List(ctx, prefix+dir)
		if err != nil {
			return err
		}
		for _, key := range keys {
			if _, written := objects[key]; written || keep[key] || path.Ext(key) != ".json" || !strings.HasPrefix(key, prefix) {
				continue
			}
			if err := store.Delete(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}
