package vrg

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// VolSync's keys travel through the stores (docs/decisions/0008-volsync-keys-through-the-stores.md).
// A ReplicationSource on the primary needs the rsync-tls pre-shared key of its destination on the
// secondary, a Secret in the PVC's namespace that the secondary's agent creates
// (volsync.EnsureDestination). The hub's credential on a managed cluster has no right on Secrets,
// so the key goes the way the group's other data goes between the agents: sealed in the group's
// S3 stores, under the profile's store key, which only the agents' clusters (and the hub's copy
// of the profile, for rotation) hold.
//   - The secondary writes, after receiveVolSync, each destination's key to every store of the
//     group, at <group prefix>volsync-keys/<pvc namespace>/<pvc>.json, with the time it wrote it.
//     It remembers what it wrote or found (the ledger) and reads each store's object again only
//     every volSyncKeyRecheck, so a settled secondary writes nothing, and an object deleted or
//     damaged in a store is written again within that time.
//   - The primary, before protecting its PVCs, makes each spec.volSync.destinations entry's key
//     Secret on its own cluster from the newest object of the stores that opens and is a key
//     drover makes; a Secret it holds is checked against the stores every volSyncKeyRecheck, so a
//     key the secondary replaced (its Secret deleted) reaches the primary within that time.
//   - A key object that does not open or is not a key (written by someone without the store key,
//     or damaged) is refused: with no key Secret on the primary, the PVC's DataProtected says
//     StoreObjectRefused, naming the store and the object and saying what to delete; nothing is
//     created from it. A key in no store yet waits (VolSyncDestinationUnknown).
//   - A relocation swaps the roles without a new key: each cluster keeps the Secret it has, the
//     new secondary reuses its copy and writes it again, as the newest.
//   - Unprotecting deletes the group's prefix in every store (deleteStoredGroup), keys included,
//     and each agent its key Secrets (unprotectVolSync).

// volSyncKeysDir holds the keys under a group's prefix; removeOlderClaims leaves it alone (the
// keys belong to the group, not to a claim).
const volSyncKeysDir = "volsync-keys/"

// AnnotationVolSyncKeyWritten is, on a key Secret a primary made from the stores, when the
// secondary wrote that key there: a store that missed a newer write never replaces it.
const AnnotationVolSyncKeyWritten = "drover.io/volsync-key-written"

// volSyncKeyRecheck is how often a secondary compares each key it wrote with each store, and a
// primary holding a destination's key compares it with the stores: a GET per key and store.
// Reconciler.VolSyncKeyRecheck changes it (tests).
const volSyncKeyRecheck = time.Minute

// keyRecheck is the Reconciler's VolSyncKeyRecheck, volSyncKeyRecheck when unset.
func (r *Reconciler) keyRecheck() time.Duration {
	if r.VolSyncKeyRecheck > 0 {
		return r.VolSyncKeyRecheck
	}
	return volSyncKeyRecheck
}

// pskFormat is the key VolSync reads from psk.txt and volsync.EnsureDestination makes.
var pskFormat = regexp.MustCompile(`^volsync:[0-9a-f]{64}$`)

// VolSyncKeyKey is the key of a destination's VolSync key under a group's prefix.
func VolSyncKeyKey(prefix, namespace, pvc string) string {
	return prefix + volSyncKeysDir + namespace + "/" + pvc + ".json"
}

// StoredVolSyncKey is the object at VolSyncKeyKey: the rsync-tls key of one PVC's destination, as
// the secondary that holds the destination wrote it.
type StoredVolSyncKey struct {
	PVCNamespace  string      `json:"pvcNamespace"`
	PVCName       string      `json:"pvcName"`
	KeySecretName string      `json:"keySecretName"`
	PSK           string      `json:"psk"`
	Cluster       string      `json:"cluster"`
	Written       metav1.Time `json:"written"`
}

// volSyncKeyRecord is what the ledger remembers of one key: its digest, and when it was last
// compared with the store (a secondary's write) or the stores (a primary's check).
type volSyncKeyRecord struct {
	sum     digest
	checked time.Time
}

// volSyncKey returns the record of a key under name ("<profile>/<ns>/<pvc>" for a store a
// secondary wrote to, "<ns>/<pvc>" for a primary's check).
func (l *ledger) volSyncKey(vrg *v1alpha1.VolumeReplicationGroup, name string) volSyncKeyRecord {
	if l == nil {
		return volSyncKeyRecord{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.group(vrg).volSyncKeys[name]
}

// setVolSyncKey records a key under name.
func (l *ledger) setVolSyncKey(vrg *v1alpha1.VolumeReplicationGroup, name string, rec volSyncKeyRecord) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.group(vrg)
	if g.volSyncKeys == nil {
		g.volSyncKeys = map[string]volSyncKeyRecord{}
	}
	g.volSyncKeys[name] = rec
}

func pskDigest(psk string) digest { return sha256.Sum256([]byte(psk)) }

// localKey reads a key Secret of this cluster, uncached (the agent neither lists nor watches
// Secrets); nil when there is none.
func (r *Reconciler) localKey(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get Secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}

// publishVolSyncKeys, on a secondary, writes the key of every destination it reports to every
// store of the group that does not hold it yet. A key no store took leaves DataProtected False
// (StoreUnavailable): the primary cannot send until one store has it.
func (r *Reconciler) publishVolSyncKeys(ctx context.Context, sc *scope) (ctrl.Result, error) {
	var errs []error
	for _, d := range sc.vrg.Status.VolSyncDestinations {
		if r.publishedEverywhere(sc, d) {
			continue
		}
		secret, err := r.localKey(ctx, d.PVCNamespace, d.KeySecretName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if secret == nil || !pskFormat.Match(secret.Data[volsync.PSKKey]) {
			continue // EnsureDestination makes it, or says what is wrong with it
		}
		key := StoredVolSyncKey{PVCNamespace: d.PVCNamespace, PVCName: d.PVCName, KeySecretName: d.KeySecretName,
			PSK: string(secret.Data[volsync.PSKKey]), Cluster: r.ClusterName}
		var failed []string
		for _, profile := range sc.vrg.Spec.S3Profiles {
			if err := r.publishVolSyncKey(ctx, sc, profile, key); err != nil {
				failed = append(failed, err.Error())
			}
		}
		if len(failed) == 0 || len(failed) < len(sc.vrg.Spec.S3Profiles) {
			continue
		}
		if sc.volSyncUnreachable == nil {
			sc.volSyncUnreachable = &metav1.Condition{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonStoreUnavailable, Message: fmt.Sprintf(
					"the VolSync key of PVC %s/%s could not be written to any S3 store of the group, and the primary reads it only there: %s",
					d.PVCNamespace, d.PVCName, strings.Join(failed, "; "))}
		}
		errs = append(errs, fmt.Errorf("failed to write the VolSync key of PVC %s/%s to any store", d.PVCNamespace, d.PVCName))
	}
	if len(errs) > 0 {
		return ctrl.Result{RequeueAfter: requeueStoreDown}, nil
	}
	if len(sc.vrg.Status.VolSyncDestinations) > 0 {
		// Back when the keys are due a check: nothing else need wake a secondary whose primary
		// cannot send (its key refused or missing), and the check is what writes the key again.
		return ctrl.Result{RequeueAfter: r.keyRecheck()}, nil
	}
	return ctrl.Result{}, nil
}

// publishedEverywhere reports whether every store of the group was found holding the
// destination's key, or written it, within volSyncKeyRecheck: a settled secondary reads neither
// the key Secret nor the stores. A key Secret replaced meanwhile reaches the stores at the next
// check.
func (r *Reconciler) publishedEverywhere(sc *scope, d v1alpha1.VolSyncDestination) bool {
	for _, profile := range sc.vrg.Spec.S3Profiles {
		rec := r.written.volSyncKey(sc.vrg, profile.Name+"/"+d.PVCNamespace+"/"+d.PVCName)
		if rec.checked.IsZero() || time.Since(rec.checked) >= r.keyRecheck() {
			return false
		}
	}
	return true
}

// publishVolSyncKey writes one key to one store unless the ledger or the store shows it there.
func (r *Reconciler) publishVolSyncKey(ctx context.Context, sc *scope, profile v1alpha1.S3Profile, key StoredVolSyncKey) error {
	name := profile.Name + "/" + key.PVCNamespace + "/" + key.PVCName
	sum := pskDigest(key.PSK)
	if rec := r.written.volSyncKey(sc.vrg, name); rec.sum == sum && time.Since(rec.checked) < r.keyRecheck() {
		return nil
	}
	store, err := r.storeOf(ctx, sc, profile)
	if err != nil {
		return err
	}
	objectKey := VolSyncKeyKey(StorePrefix(sc.vrg), key.PVCNamespace, key.PVCName)
	stored, current, err := readVolSyncKey(ctx, store, sc.vrg, objectKey)
	switch {
	case err == nil && stored != nil && current && stored.PSK == key.PSK:
		r.written.setVolSyncKey(sc.vrg, name, volSyncKeyRecord{sum: sum, checked: time.Now()})
		return nil
	case err != nil && !errors.Is(err, objectstore.ErrRefused):
		return err
	}
	key.Written = metav1.NewTime(time.Now().UTC())
	body, err := json.Marshal(key)
	if err != nil {
		return fmt.Errorf("failed to encode the VolSync key of PVC %s/%s: %w", key.PVCNamespace, key.PVCName, err)
	}
	if err := store.Put(ctx, objectKey, body); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the VolSync key of a destination to the store", "store", profile.Name,
		"pvc", types.NamespacedName{Namespace: key.PVCNamespace, Name: key.PVCName})
	r.written.setVolSyncKey(sc.vrg, name, volSyncKeyRecord{sum: sum, checked: time.Now()})
	return nil
}

// readVolSyncKey reads a key object; nil when there is none. One that opens but is not a key
// drover wrote for this group's PVC (another PVC's or Secret's name, not a key of VolSync's
// form) is refused as one that does not open is. current is false when it is sealed under an
// older store key.
func readVolSyncKey(ctx context.Context, store objectstore.Store, vrg *v1alpha1.VolumeReplicationGroup, objectKey string) (*StoredVolSyncKey, bool, error) {
	body, current, err := objectstore.GetCurrent(ctx, store, objectKey)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	k := &StoredVolSyncKey{}
	if err := json.Unmarshal(body, k); err != nil {
		return nil, false, objectstore.Refused(store.Name(), objectKey, fmt.Errorf("it is not a VolSync key: %w", err))
	}
	switch {
	case VolSyncKeyKey(StorePrefix(vrg), k.PVCNamespace, k.PVCName) != objectKey:
		return nil, false, objectstore.Refused(store.Name(), objectKey, fmt.Errorf("it is the key of PVC %s/%s, not of the PVC its name says", k.PVCNamespace, k.PVCName))
	case k.KeySecretName != volsync.KeySecretName(vrg.Name, k.PVCName):
		return nil, false, objectstore.Refused(store.Name(), objectKey, fmt.Errorf("it names Secret %q, not the key Secret drover derives", k.KeySecretName))
	case !pskFormat.MatchString(k.PSK):
		return nil, false, objectstore.Refused(store.Name(), objectKey, errors.New("its key is not one drover makes (volsync:<64 hex digits>)"))
	}
	return k, current, nil
}

// fetchVolSyncKeys, on a primary, makes the key Secret of every destination the group sends to
// from the stores (fetchVolSyncKey); what stops a key from being there is kept in the scope for
// the PVC's DataProtected (volSyncKeyResult).
func (r *Reconciler) fetchVolSyncKeys(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.vrg.Spec.VolSync == nil || r.volSync() == nil {
		return ctrl.Result{}, nil
	}
	result := ctrl.Result{}
	var errs []error
	for _, d := range sc.vrg.Spec.VolSync.Destinations {
		res, err := r.fetchVolSyncKey(ctx, sc, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.IsDone() {
			continue
		}
		if sc.volSyncKeys == nil {
			sc.volSyncKeys = map[string]replication.Result{}
		}
		sc.volSyncKeys[d.PVCNamespace+"/"+d.PVCName] = res
		result = shortest(result, ctrl.Result{RequeueAfter: resultRequeue(res)})
	}
	return result, errors.Join(errs...)
}

// volSyncKeyResult is what a VolSync PVC's Protect result becomes when its destination's key is
// not on this cluster for a reason fetchVolSyncKeys found: that reason, the PVC writable.
func volSyncKeyResult(sc *scope, key string, res replication.Result) replication.Result {
	problem, ok := sc.volSyncKeys[key]
	if !ok || res.IsDone() || res.Outcome == replication.OutcomeFailed {
		return res
	}
	problem.Writable = res.Writable
	return problem
}

// fetchVolSyncKey makes one destination's key Secret on this cluster hold the newest key of the
// group's stores. A Secret of that name that is not this group's key is never touched. With a
// key Secret that the stores do not contradict, it is Done whatever the stores say; otherwise
// the Result says what the PVC waits for or what to fix.
func (r *Reconciler) fetchVolSyncKey(ctx context.Context, sc *scope, d v1alpha1.VolSyncDestination) (replication.Result, error) {
	pvcKey := d.PVCNamespace + "/" + d.PVCName
	if want := volsync.KeySecretName(sc.vrg.Name, d.PVCName); d.KeySecretName != want || !slices.Contains(ProtectedNamespaces(sc.vrg), d.PVCNamespace) {
		return replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"spec.volSync.destinations names key Secret %s/%s for PVC %s: drover uses only %s in a namespace the group protects; drover never writes such an entry, so check who may write this group",
			d.PVCNamespace, d.KeySecretName, pvcKey, want)), nil
	}
	secret, err := r.localKey(ctx, d.PVCNamespace, d.KeySecretName)
	if err != nil {
		return replication.Result{}, err
	}
	if secret != nil && !volsync.OwnedBy(secret, sc.vrg) {
		return replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf(
			"Secret %s/%s exists and is not the VolSync key of VolumeReplicationGroup %s/%s (label %s): delete or rename it, and drover makes it from the group's S3 stores",
			d.PVCNamespace, d.KeySecretName, sc.vrg.Namespace, sc.vrg.Name, volsync.LabelVRGName)), nil
	}
	var have string
	if secret != nil && pskFormat.Match(secret.Data[volsync.PSKKey]) {
		have = string(secret.Data[volsync.PSKKey])
	}
	checkName := pvcKey
	if rec := r.written.volSyncKey(sc.vrg, checkName); have != "" && rec.sum == pskDigest(have) && time.Since(rec.checked) < r.keyRecheck() {
		return replication.Done(), nil
	}
	newest, problems := r.newestVolSyncKey(ctx, sc, d)
	switch {
	case newest == nil && have != "":
		if len(problems) > 0 {
			ctrl.LoggerFrom(ctx).Info("Keeping the VolSync key Secret: no store gives a key for it", "pvc", pvcKey, "problems", problemText(problems))
		}
		r.written.setVolSyncKey(sc.vrg, checkName, volSyncKeyRecord{sum: pskDigest(have), checked: time.Now()})
		return replication.Done(), nil
	case newest == nil:
		return missingVolSyncKey(pvcKey, problems), nil
	case newest.PSK != have && have != "" && !newest.Written.After(keyWritten(secret)):
		// A store that missed the secondary's last write still holds an older key: the
		// Secret, made from a newer one, stays.
		ctrl.LoggerFrom(ctx).V(1).Info("Keeping the VolSync key Secret: the stores' newest key is older", "pvc", pvcKey)
		newest.PSK = have
	case newest.PSK != have:
		if err := r.replaceKeySecret(ctx, sc, secret, d, *newest); err != nil {
			return replication.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("Made the VolSync key Secret from the stores", "pvc", pvcKey, "writtenBy", newest.Cluster, "written", newest.Written)
	}
	r.written.setVolSyncKey(sc.vrg, checkName, volSyncKeyRecord{sum: pskDigest(newest.PSK), checked: time.Now()})
	return replication.Done(), nil
}

// keyProblem is why one store gave no key.
type keyProblem struct {
	store string
	err   error
}

func problemText(problems []keyProblem) string {
	parts := make([]string, 0, len(problems))
	for _, p := range problems {
		parts = append(parts, p.err.Error())
	}
	return strings.Join(parts, "; ")
}

// newestVolSyncKey reads a destination's key from every store of the group and returns the one
// written last, with why the other stores gave none (refused, unreachable; a store without the
// object is not a problem).
func (r *Reconciler) newestVolSyncKey(ctx context.Context, sc *scope, d v1alpha1.VolSyncDestination) (*StoredVolSyncKey, []keyProblem) {
	var newest *StoredVolSyncKey
	var problems []keyProblem
	objectKey := VolSyncKeyKey(StorePrefix(sc.vrg), d.PVCNamespace, d.PVCName)
	for _, profile := range sc.vrg.Spec.S3Profiles {
		store, err := r.storeOf(ctx, sc, profile)
		if err != nil {
			problems = append(problems, keyProblem{store: profile.Name, err: err})
			continue
		}
		k, _, err := readVolSyncKey(ctx, store, sc.vrg, objectKey)
		switch {
		case err != nil:
			problems = append(problems, keyProblem{store: profile.Name, err: err})
		case k != nil && (newest == nil || k.Written.After(newest.Written.Time)):
			newest = k
		}
	}
	return newest, problems
}

// missingVolSyncKey is the Result of a PVC whose destination's key is in no store: refused
// where a store holds an object that is not a key drover wrote, waiting otherwise.
func missingVolSyncKey(pvcKey string, problems []keyProblem) replication.Result {
	for _, p := range problems {
		if errors.Is(p.err, objectstore.ErrRefused) {
			return replication.Retry(requeueAfterFailure, v1alpha1.ReasonStoreObjectRefused, fmt.Sprintf(
				"PVC %s cannot send: its VolSync key in S3 profile %s is refused: %s; drover's agents write it sealed under the profile's store key, so someone else wrote it or it was damaged: delete that object from the store, and the secondary's agent writes it again within a minute",
				pvcKey, p.store, refusedCause(p.err)))
		}
	}
	if len(problems) > 0 {
		return replication.Retry(requeueStoreDown, v1alpha1.ReasonStoreUnavailable, fmt.Sprintf(
			"PVC %s waits for its VolSync key, which the secondary's agent writes to the group's S3 stores; none could be read: %s", pvcKey, problemText(problems)))
	}
	return replication.Retry(requeueWaitingForStorage, v1alpha1.ReasonVolSyncDestinationUnknown, fmt.Sprintf(
		"PVC %s waits for its VolSync key: no S3 store of the group holds it yet; the secondary's agent writes it there once its destination exists (see the secondary's group if this lasts)", pvcKey))
}

// keyWritten is when the key a Secret holds was written to the stores
// (AnnotationVolSyncKeyWritten); zero when it does not say (a Secret this cluster made as a
// secondary).
func keyWritten(secret *corev1.Secret) time.Time {
	if secret == nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, secret.Annotations[AnnotationVolSyncKeyWritten])
	if err != nil {
		return time.Time{}
	}
	return t
}

// refusedCause says which object a store refused and why, without the advice for a group's
// metadata that the store's error carries.
func refusedCause(err error) string {
	var se *objectstore.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	if errors.Is(err, objectstore.ErrNotSealed) {
		return fmt.Sprintf("object %q has no drover envelope (it was written without the store key)", se.Key)
	}
	return fmt.Sprintf("object %q: %v", se.Key, se.Err)
}

// replaceKeySecret makes the key Secret of a destination hold the key: created when there is none,
// otherwise deleted (only that version: the agent may delete, not change, its key Secrets) and
// created again.
func (r *Reconciler) replaceKeySecret(ctx context.Context, sc *scope, old *corev1.Secret, d v1alpha1.VolSyncDestination, key StoredVolSyncKey) error {
	if old != nil {
		if err := r.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete Secret %s/%s to replace its VolSync key: %w", old.Namespace, old.Name, err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.PVCNamespace, Name: d.KeySecretName, Labels: volsync.GroupLabels(sc.vrg),
			Annotations: map[string]string{AnnotationVolSyncKeyWritten: key.Written.UTC().Format(time.RFC3339Nano)}},
		Data: map[string][]byte{volsync.PSKKey: []byte(key.PSK)},
	}
	if err := r.Client.Create(ctx, secret, client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to create Secret %s/%s: %w", d.PVCNamespace, d.KeySecretName, err)
	}
	return nil
}
