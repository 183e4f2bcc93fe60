package vrg

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
)

// Kubernetes object protection (self-contained mode, spec.kubeObjectProtection set): a primary
// captures the objects of its protected namespaces into every store, once per
// schedulingInterval; a primary promoted by a failover or relocation restores them once its
// PVCs are restored and Bound, workloads last; a secondary demoted by a failover or relocation
// removes the application's workloads before its PVCs' consumer checks, so their pods go and
// the demotion needs no person. See internal/kubeobjects for what is captured and how.
//
// Decisions that cannot be re-observed are annotations of the group:
const (
	// AnnotationKubeObjectsCapturedAt is when (RFC 3339) the last capture was written to at
	// least one store. The next capture is due an interval later (or at once when the spec
	// changes), however often the group is reconciled.
	AnnotationKubeObjectsCapturedAt = "drover.io/kube-objects-captured-at"
	// AnnotationKubeObjectsRestored is the generation whose promotion restored the objects: later
	// passes of that generation capture instead of restoring again (the application may delete
	// an object since).
	AnnotationKubeObjectsRestored = "drover.io/kube-objects-restored"
	// AnnotationKubeObjectsFinalCapture is the generation whose relocation wrote the final
	// capture, from the demoting primary before its workloads were removed.
	AnnotationKubeObjectsFinalCapture = "drover.io/kube-objects-final-capture"
)

// Least privilege is broad here by nature: the agent reads and recreates an application's
// objects. It creates namespaces for a promotion; reads (list included, uncached), creates and,
// for workloads, deletes the default kinds (kubeobjects.DefaultKinds); creating Roles and
// RoleBindings needs escalate and bind, since their rules and subjects are the application's.
// Custom resources named in includedKinds need get, list and create granted on them by the
// installation (an aggregated ClusterRole): no marker can name them in advance, and without
// it the capture reports Forbidden. Secrets are listed here, which the protect path never does.
// The default kinds and Namespaces are watched too, their metadata only (capture): a settled
// group's capture then reads nothing from the API server.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;serviceaccounts;services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;escalate;bind
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies;ingresses,verbs=get;list;watch;create

// ensureNamespaces creates the protected namespaces that do not exist on a cluster being
// promoted, before restorePVCs creates PVCs in them. Both modes need it: in self-contained
// mode the application's namespaces exist only where it ran. The namespaces are created bare;
// the kube-object restore adds their stored labels. Each then gets the administrator's floor
// (floor.go), whether the agent created it or found it; the restore is not complete until the
// floor's quota is counted in each (sc.floorWaiting).
func (r *Reconciler) ensureNamespaces(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !promoting(sc.vrg) || restoreCompleted(sc.vrg) {
		return ctrl.Result{}, nil
	}
	var errs []error
	for _, name := range protectedNamespaces(sc.vrg) {
		if err := r.ensureNamespace(ctx, name); err != nil {
			errs = append(errs, err)
			if !r.Floor.IsZero() {
				sc.floorWaiting = append(sc.floorWaiting, fmt.Sprintf("the namespace floor of %s (%v)", name, err))
			}
			continue
		}
		if r.Floor.IsZero() {
			continue
		}
		waiting, err := r.applyFloor(ctx, name)
		if err != nil {
			errs = append(errs, err)
			waiting = fmt.Sprintf("the namespace floor of %s (%v)", name, err)
		}
		if waiting != "" {
			sc.floorWaiting = append(sc.floorWaiting, waiting)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if len(sc.floorWaiting) > 0 {
		return ctrl.Result{RequeueAfter: requeueWaitingForFloor}, nil
	}
	return ctrl.Result{}, nil
}

// requeueWaitingForFloor: the quota controller counts a new ResourceQuota within a second or
// so, and nothing the agent watches says when.
const requeueWaitingForFloor = time.Second

// ensureNamespace creates a protected namespace unless it exists.
func (r *Reconciler) ensureNamespace(ctx context.Context, name string) error {
	if _, ok := r.cachedMetadata(ctx, namespaceGVK, client.ObjectKey{Name: name}); ok {
		return nil // it exists; a namespace deleted since fails the PVCs' creation, retried
	}
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("failed to get namespace %s: %w", name, err)
		}
		return nil
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.Client.Create(ctx, ns, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created a protected namespace for the restore", "namespace", name)
	return nil
}

// protectKubeObjects, the last phase of a primary, restores the objects once after a promotion
// and captures them every interval otherwise.
func (r *Reconciler) protectKubeObjects(ctx context.Context, sc *scope) (ctrl.Result, error) {
	spec := sc.vrg.Spec.KubeObjectProtection
	if spec == nil {
		return ctrl.Result{}, nil
	}
	sel, err := kubeobjects.NewSelection(spec)
	if err != nil {
		// Nothing to retry: a change of the spec wakes the group.
		sc.kubeObjectsReady = ptrTo(condition(v1alpha1.ConditionKubeObjectsReady, false, v1alpha1.ReasonInvalidSpec, err.Error()))
		return ctrl.Result{}, nil
	}
	if promoting(sc.vrg) && sc.vrg.Annotations[AnnotationKubeObjectsRestored] != generation(sc.vrg) {
		return r.restoreKubeObjects(ctx, sc, sel)
	}
	if sc.restore != nil && !sc.restore.complete() {
		return ctrl.Result{}, nil
	}
	if sc.epoch.isStale() {
		sc.kubeObjectsReady = ptrTo(condition(v1alpha1.ConditionKubeObjectsReady, false, v1alpha1.ReasonStalePrimary,
			"the objects are not captured: "+staleMessage(sc.epoch)))
		return ctrl.Result{}, nil
	}
	now := time.Now()
	// A store caught up by the fence this pass gets this primary's capture at once.
	if wait := captureDueIn(sc.vrg, sc.interval, r.written.collected(sc.vrg), now); wait > 0 && len(sc.epoch.caughtUpStores()) == 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	cr, err := r.capture(ctx, sc, sel, now)
	sc.kubeObjectsReady = ptrTo(captureCondition(cr, err, promoting(sc.vrg)))
	if err != nil {
		return ctrl.Result{}, err
	}
	if !cr.written() {
		return ctrl.Result{}, fmt.Errorf("failed to write the objects of VolumeReplicationGroup %s to any S3 profile", klog.KObj(sc.vrg))
	}
	// Once one store holds the capture, the next is an interval away: a store that is down
	// gets the next one rather than the others being compared at every retry.
	r.written.setCollected(sc.vrg, now)
	if cr.everywhere() {
		sc.capturedEverywhere = now
	}
	// The annotation records the last capture that changed a store (and that the group
	// captured as primary, needsFinalCapture): an unchanged capture writes nothing to the API.
	if cr.put || sc.vrg.Annotations[AnnotationKubeObjectsCapturedAt] == "" {
		if err := r.annotate(ctx, sc, AnnotationKubeObjectsCapturedAt, now.UTC().Format(time.RFC3339Nano)); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: sc.interval}, nil
}

// captureDueIn is how long until the next capture; zero or less means now. A capture is due an
// interval after the last one (the later of the last that changed a store, recorded on the
// group, and the last compared, collected, which the agent keeps in memory), and at once when
// KubeObjectsReady does not describe the current generation (a new spec, role or action).
func captureDueIn(vrg *v1alpha1.VolumeReplicationGroup, interval time.Duration, collected, now time.Time) time.Duration {
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
	if c == nil || c.ObservedGeneration != vrg.Generation {
		return 0
	}
	last, err := time.Parse(time.RFC3339Nano, vrg.Annotations[AnnotationKubeObjectsCapturedAt])
	if err != nil && collected.IsZero() {
		return 0
	}
	if collected.After(last) {
		last = collected
	}
	return last.Add(interval).Sub(now)
}

// capture takes a group's periodic capture. When the watch-backed cache of the objects' metadata
// shows nothing changed since the last capture read from the API server, and the ledger trusts
// that every store still holds it, the capture reads and writes nothing: a settled group's
// capture costs no API request (docs/design/agent.md, "The agent at scale"). Otherwise the objects are read
// uncached and written where they differ (writeCapture).
func (r *Reconciler) capture(ctx context.Context, sc *scope, sel kubeobjects.Selection, now time.Time) (*captureResult, error) {
	fp := r.fingerprint(ctx, sc, sel)
	if cr := r.unchangedCapture(sc, fp, now); cr != nil {
		return cr, nil
	}
	last := r.written.lastCapture(sc.vrg)
	if fp != (kubeobjects.Fingerprint{}) && last.fingerprint == fp && last.pending != nil {
		// Nothing changed since the capture a store still lacks (the lost peer's store after a
		// failover, every interval until it returns): that store gets the capture kept in
		// memory, and the objects are not read again.
		cr := r.putCaptureDoc(ctx, sc, *last.pending, now, false)
		cr.objects, cr.summary, cr.notServed = last.objects, last.summary, last.notServed
		last.pending = pendingDoc(cr, *last.pending)
		r.written.setLastCapture(sc.vrg, last)
		return cr, nil
	}
	cr, doc, err := r.writeCapture(ctx, sc, sel, now, false)
	if err == nil {
		r.written.setLastCapture(sc.vrg, capturedAs{
			fingerprint: fp, sum: cr.sum, objects: cr.objects, summary: cr.summary, notServed: cr.notServed,
			pending: pendingDoc(cr, doc),
		})
	}
	return cr, err
}

// pendingDoc is the capture to keep in memory: doc while a store failed to take it, nil once
// every store holds it.
func pendingDoc(cr *captureResult, doc captureDoc) *captureDoc {
	for _, s := range cr.stores {
		if s.err != nil {
			return &doc
		}
	}
	return nil
}

// fingerprint is the fingerprint of the group's objects in the watch-backed cache; zero when
// there is none: no cache, a kind outside kubeobjects.DefaultKinds (the agent may watch only
// those, RBAC above), or an informer not synced yet.
func (r *Reconciler) fingerprint(ctx context.Context, sc *scope, sel kubeobjects.Selection) kubeobjects.Fingerprint {
	if r.Cache == nil {
		return kubeobjects.Fingerprint{}
	}
	resources, _, err := sel.Resolve(r.Client.RESTMapper())
	if err != nil {
		return kubeobjects.Fingerprint{}
	}
	for _, res := range resources {
		if !slices.Contains(kubeobjects.DefaultKinds, res.GVK.GroupKind()) {
			return kubeobjects.Fingerprint{}
		}
	}
	fp, ok, err := kubeobjects.FingerprintOf(ctx, r.Cache, resources, protectedNamespaces(sc.vrg), sel)
	if err != nil || !ok {
		ctrl.LoggerFrom(ctx).V(1).Info("The objects are read from the API server: their cache is not ready", "error", err)
		return kubeobjects.Fingerprint{}
	}
	return fp
}

// unchangedCapture is the result of a capture that need not read anything: the objects'
// fingerprint is that of the last capture read, and every store holds that capture under a
// record the ledger trusts and need not verify yet (putCapture would write nothing). Nil when
// the capture must read the objects.
func (r *Reconciler) unchangedCapture(sc *scope, fp kubeobjects.Fingerprint, now time.Time) *captureResult {
	last := r.written.lastCapture(sc.vrg)
	if fp == (kubeobjects.Fingerprint{}) || last.fingerprint != fp {
		return nil
	}
	cr := &captureResult{sum: last.sum, objects: last.objects, summary: last.summary, notServed: last.notServed}
	for _, profile := range sc.vrg.Spec.S3Profiles {
		if sc.epoch.writable(profile.Name) != nil {
			return nil
		}
		rec := r.written.store(sc.vrg, profile.Name)
		if !rec.trusted(sc.epoch.view(profile)) || rec.capture != last.sum || !now.Before(rec.captureUntil) {
			return nil
		}
		if cr.at.IsZero() {
			cr.at = rec.captureAt
		}
		cr.stores = append(cr.stores, storeOutcome{name: profile.Name})
	}
	if len(cr.stores) == 0 {
		return nil
	}
	return cr
}

// captureResult is what one capture read and where it was written.
type captureResult struct {
	// sum is the digest of the capture's content.
	sum digest
	// at is when the capture the stores hold was taken: an unchanged capture keeps the time
	// of the first one with its content.
	at        time.Time
	objects   int
	summary   string
	notServed []string
	stores    []storeOutcome
	// put is true when a store was written this pass (its content changed).
	put bool
}

// written reports whether at least one store holds the capture.
func (c *captureResult) written() bool {
	for _, s := range c.stores {
		if s.err == nil {
			return true
		}
	}
	return false
}

// everywhere reports whether every store holds the capture.
func (c *captureResult) everywhere() bool {
	for _, s := range c.stores {
		if s.err != nil {
			return false
		}
	}
	return len(c.stores) > 0
}

// captureDoc is one capture as written: its document, the digest of its content (everything
// but the time it was taken) and that time.
type captureDoc struct {
	body []byte
	sum  digest
	at   time.Time
}

// writeCapture reads the selected objects of the protected namespaces and makes every S3
// profile hold them, as one document, which it returns. A store that holds the same content
// (the ledger says so, or it is read and compared) is not written, unless always is set (a
// relocation's final capture). An error means nothing was written.
func (r *Reconciler) writeCapture(ctx context.Context, sc *scope, sel kubeobjects.Selection, now time.Time, always bool) (*captureResult, captureDoc, error) {
	resources, notServed, err := sel.Resolve(r.Client.RESTMapper())
	if err != nil {
		return nil, captureDoc{}, err
	}
	namespaces := protectedNamespaces(sc.vrg)
	objects, err := kubeobjects.Collect(ctx, r.Client, resources, namespaces, sel)
	if err != nil {
		return nil, captureDoc{}, err
	}
	doc, err := r.captureDoc(sc, namespaces, objects, now)
	if err != nil {
		return nil, captureDoc{}, err
	}
	cr := r.putCaptureDoc(ctx, sc, doc, now, always)
	cr.objects, cr.summary, cr.notServed = len(objects), kubeobjects.Summary(objects), notServed
	ctrl.LoggerFrom(ctx).V(1).Info("Captured the Kubernetes objects", "objects", cr.objects, "written", cr.written(), "changed", cr.put)
	return cr, doc, nil
}

// putCaptureDoc makes every S3 profile hold doc (putCapture) and says where it is.
func (r *Reconciler) putCaptureDoc(ctx context.Context, sc *scope, doc captureDoc, now time.Time, always bool) *captureResult {
	cr := &captureResult{sum: doc.sum, at: doc.at}
	held := false
	for _, profile := range sc.vrg.Spec.S3Profiles {
		at, put, err := r.putCapture(ctx, sc, profile, doc, now, always)
		cr.stores = append(cr.stores, storeOutcome{name: profile.Name, err: err})
		cr.put = cr.put || put
		if err == nil && !held {
			// The first store holding the capture dates it, so the condition does not change
			// while the content does not.
			cr.at, held = at, true
		}
	}
	return cr
}

// captureDoc encodes a capture. Content that a store holds, as far as the ledger trusts its
// record there, keeps the time it was first taken, so every store holds the same document.
func (r *Reconciler) captureDoc(sc *scope, namespaces []string, objects []*unstructured.Unstructured, now time.Time) (captureDoc, error) {
	sum, err := captureDigest(namespaces, objects)
	if err != nil {
		return captureDoc{}, err
	}
	doc := captureDoc{sum: sum, at: now}
	for _, profile := range sc.vrg.Spec.S3Profiles {
		if rec := r.written.store(sc.vrg, profile.Name); rec.trusted(sc.epoch.view(profile)) && rec.capture == sum && !rec.captureAt.IsZero() {
			doc.at = rec.captureAt
			break
		}
	}
	doc.body, err = kubeobjects.Encode(&kubeobjects.Capture{
		Version: kubeobjects.FormatVersion, CapturedAt: metav1.NewTime(doc.at), Namespaces: namespaces, Objects: objects,
	})
	return doc, err
}

// captureDigest is the digest of a capture's content: its document without the time.
func captureDigest(namespaces []string, objects []*unstructured.Unstructured) (digest, error) {
	body, err := kubeobjects.Encode(&kubeobjects.Capture{Version: kubeobjects.FormatVersion, Namespaces: namespaces, Objects: objects})
	if err != nil {
		return digest{}, err
	}
	return sha256.Sum256(body), nil
}

// putCapture makes one store hold a capture: nothing to do when the ledger says it holds the
// same content under the marker read this pass. A record that only expired (the same marker and
// epoch) is verified: the stored capture is read and compared, and written only when it differs.
// Without a trusted record (a new primary, a claim or catch-up since, an agent restarted) the
// capture is written: a capture of the same content by another primary is that primary's, and
// a new primary writes its own. always (a relocation's final capture) writes anyway. It returns
// when the capture the store now holds was taken, and whether it wrote.
func (r *Reconciler) putCapture(ctx context.Context, sc *scope, profile v1alpha1.S3Profile, doc captureDoc, now time.Time, always bool) (time.Time, bool, error) {
	// A store whose marker could not be read is not written this pass.
	if err := sc.epoch.writable(profile.Name); err != nil {
		return time.Time{}, false, err
	}
	view := sc.epoch.view(profile)
	rec := r.written.store(sc.vrg, profile.Name)
	known := !always && rec.trusted(view) && rec.capture == doc.sum
	if known && now.Before(rec.captureUntil) {
		return rec.captureAt, false, nil
	}
	store, err := r.storeOf(ctx, sc, profile)
	if err != nil {
		r.written.drop(sc.vrg, profile.Name)
		return time.Time{}, false, err
	}
	// A relocation's final capture goes where the marker names the data, which the successor
	// reads; any other under the own claim (claimkeys.go).
	key := sc.epoch.ownPrefix(sc.vrg) + kubeobjects.StoreKey
	if always {
		key = sc.epoch.prefix(sc.vrg, profile.Name) + kubeobjects.StoreKey
	}
	at, put := doc.at, true
	if known {
		if stored, ok := storedCapture(ctx, store, key); ok && stored.sum == doc.sum {
			at, put = stored.at, false
		}
	}
	if put {
		if err := store.Put(ctx, key, doc.body); err != nil {
			r.written.drop(sc.vrg, profile.Name)
			return time.Time{}, false, err
		}
	}
	r.written.update(sc.vrg, profile.Name, view, func(rec *storeRecord) {
		rec.capture, rec.captureAt, rec.captureUntil = doc.sum, at, verifiedUntil(now)
	})
	return at, put, nil
}

// storedCapture reads the capture a store holds and its digest; ok is false when there is none
// or it cannot be read (the write that follows then reports the store's error), and when it is
// sealed under a store key that is no longer the current one (the write that follows seals it
// anew under the current key, after a rotation).
func storedCapture(ctx context.Context, store objectstore.Store, key string) (captureDoc, bool) {
	body, current, err := objectstore.GetCurrent(ctx, store, key)
	if err != nil || !current {
		return captureDoc{}, false
	}
	c, err := kubeobjects.Decode(body)
	if err != nil {
		return captureDoc{}, false
	}
	sum, err := captureDigest(c.Namespaces, c.Objects)
	if err != nil {
		return captureDoc{}, false
	}
	return captureDoc{sum: sum, at: c.CapturedAt.Time}, true
}

// captureCondition is KubeObjectsReady after a capture: True when every store holds it; False
// naming each failing store with its classified reason and the stores written.
//
// Except on a group promoted in this generation (restored is true), whose objects this pass
// found restored: there KubeObjectsReady stays True, with the failing stores in the message,
// while at least one store holds the capture. The hub reads it as "the application is restored
// here", and right after a failover the lost peer's store always fails; ClusterDataProtected
// reports the same stores for the metadata.
func captureCondition(cr *captureResult, err error, restored bool) metav1.Condition {
	t := v1alpha1.ConditionKubeObjectsReady
	if err != nil {
		return condition(t, false, v1alpha1.ReasonError, "failed to capture the objects: "+err.Error())
	}
	var failed, ok []string
	reason := ""
	for _, s := range cr.stores {
		if s.err == nil {
			ok = append(ok, s.name)
			continue
		}
		if reason == "" {
			reason = objectstore.ReasonOf(s.err)
		}
		failed = append(failed, s.err.Error())
	}
	what := fmt.Sprintf("the capture of %s (%d objects", cr.at.UTC().Format(time.RFC3339), cr.objects)
	if cr.summary != "" {
		what += ": " + cr.summary
	}
	what += ")"
	if len(cr.notServed) > 0 {
		what += fmt.Sprintf(" has no objects of kinds %s, which this cluster does not serve,", strings.Join(cr.notServed, ", "))
	}
	if len(failed) > 0 {
		msg := strings.Join(failed, "; ")
		if len(ok) == 0 {
			return condition(t, false, reason, msg)
		}
		msg += fmt.Sprintf("; %s is in S3 profiles %s", what, strings.Join(ok, ", "))
		if restored {
			return condition(t, true, v1alpha1.ReasonSucceeded, "the objects are restored here; "+msg)
		}
		return condition(t, false, reason, msg)
	}
	return condition(t, true, v1alpha1.ReasonSucceeded, fmt.Sprintf("%s is in S3 profiles %s", what, strings.Join(ok, ", ")))
}

// restoreKubeObjects restores the objects of a promoted group, once its PVCs are restored and
// Bound, from the first S3 profile that holds a capture.
func (r *Reconciler) restoreKubeObjects(ctx context.Context, sc *scope, sel kubeobjects.Selection) (ctrl.Result, error) {
	t := v1alpha1.ConditionKubeObjectsReady
	if sc.restore == nil || !sc.restore.complete() {
		// The workloads must find their PVCs restored and Bound; restorePVCs requeues.
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonProgressing,
			"the objects are restored once the PVs and PVCs are (ClusterDataReady)"))
		return ctrl.Result{}, nil
	}
	capture, from, unavailable, refused := r.readCapture(ctx, sc)
	skipped := ""
	if len(unavailable) > 0 {
		skipped = "; skipped: " + strings.Join(unavailable, "; ")
	}
	if capture == nil && len(refused) > 0 {
		// A store holds a capture that no drover agent wrote, and none holds one to trust:
		// restoring nothing would pass for "the application had no objects". A person decides.
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonStoreObjectRefused,
			"the objects are not restored: "+strings.Join(append(refused, unavailable...), "; ")))
		return ctrl.Result{RequeueAfter: requeueAfterFailure}, nil
	}
	if from == "" {
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonStoreUnavailable,
			"no S3 profile could be read; drover retries: "+strings.Join(unavailable, "; ")))
		return ctrl.Result{}, fmt.Errorf("failed to read the objects of VolumeReplicationGroup %s from any S3 profile", klog.KObj(sc.vrg))
	}
	if len(refused) > 0 {
		skipped += "; refused: " + strings.Join(refused, "; ")
	}
	var msg string
	if capture == nil {
		msg = fmt.Sprintf("no S3 profile holds a capture of the objects (the primary never wrote one): nothing to restore; read %s%s", from, skipped)
	} else {
		objects := selected(capture, sel)
		res, waiting, result, err := r.restoreObjects(ctx, sc, objects)
		if err != nil {
			sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonError, fmt.Sprintf(
				"restoring the capture of %s from S3 profile %s: %d objects created, %d adopted, %d waiting for the ones that failed: %v",
				capture.CapturedAt.UTC().Format(time.RFC3339), from, res.Created, res.Adopted, res.Waiting, err)))
			return ctrl.Result{}, err
		}
		if len(res.Refused) > 0 {
			// Not marked restored: a refused workload a person creates here is adopted at the
			// next pass, and the condition turns True then.
			sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonPodSecurityRefused, podSecurityRefusedMessage(capture, from, res)))
			return ctrl.Result{RequeueAfter: requeueAfterFailure}, nil
		}
		if waiting != nil {
			sc.kubeObjectsReady = waiting
			return result, nil
		}
		msg = fmt.Sprintf("the capture of %s is restored from S3 profile %s (%d objects created, %d adopted: %s)%s",
			capture.CapturedAt.UTC().Format(time.RFC3339), from, res.Created, res.Adopted, kubeobjects.Summary(objects), skipped)
		ctrl.LoggerFrom(ctx).Info("Restored the Kubernetes objects", "store", from, "created", res.Created, "adopted", res.Adopted)
	}
	if err := r.annotate(ctx, sc, AnnotationKubeObjectsRestored, generation(sc.vrg)); err != nil {
		return ctrl.Result{}, err
	}
	sc.kubeObjectsReady = ptrTo(condition(t, true, v1alpha1.ReasonSucceeded, msg))
	if capture == nil {
		return ctrl.Result{}, nil
	}
	// The objects here are the capture just read: the new primary's first capture is an
	// interval away, like any other, not in the next pass. Taken at once, it read every kind
	// uncached (15 lists) for each group of a failover or relocation while the others still
	// waited for their restore: 39 % of the requests of a failover of 100.
	r.written.setCollected(sc.vrg, time.Now())
	return ctrl.Result{RequeueAfter: sc.interval}, nil
}

// podSecurityRefusedMessage says which workloads a restore left out for their pods' Pod
// Security, and what to do.
func podSecurityRefusedMessage(capture *kubeobjects.Capture, from string, res kubeobjects.RestoreResult) string {
	what := fmt.Sprintf("%d workloads", len(res.Refused))
	if len(res.Refused) == 1 {
		what = "1 workload"
	}
	return fmt.Sprintf("the capture of %s from S3 profile %s is restored (%d objects created, %d adopted) but for %s whose pods "+
		"their namespace's Pod Security level refuses, which are not created: %s. The namespace enforces the level it enforced "+
		"where the application ran (never below baseline), where these pods were refused too: fix them there, or create them here "+
		"with pods the level admits; drover adopts them then",
		capture.CapturedAt.UTC().Format(time.RFC3339), from, res.Created, res.Adopted, what, strings.Join(res.Refused, "; "))
}

// selected keeps the captured objects that the current selection still selects: the
// namespaces, and objects of its kinds whose labels match.
func selected(c *kubeobjects.Capture, sel kubeobjects.Selection) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(c.Objects))
	for _, o := range c.Objects {
		gk := o.GroupVersionKind().GroupKind()
		if gk == kubeobjects.KindNamespace || (slices.Contains(sel.Kinds, gk) && sel.Selector.Matches(labels.Set(o.GetLabels()))) {
			out = append(out, o)
		}
	}
	return out
}

// readCapture is ReadCapture with the pass's stores.
func (r *Reconciler) readCapture(ctx context.Context, sc *scope) (capture *kubeobjects.Capture, from string, unavailable, refused []string) {
	return ReadCapture(ctx, sc.vrg, r.Client.RESTMapper(), func(p v1alpha1.S3Profile) (objectstore.Store, error) {
		return r.storeOf(ctx, sc, p)
	})
}

// ReadCapture reads a group's capture from the first S3 profile, in spec order, that holds one
// that passes the checked restore (kubeobjects.Check, against the group's own protected
// namespaces): its objects are the ones to restore. from names the profile read ("" when none
// could be read); capture is nil when the readable ones hold none. refused are the stores whose
// object was refused (too large, or failing the checks), each naming the store and the object.
func ReadCapture(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, mapper apimeta.RESTMapper,
	storeOf func(v1alpha1.S3Profile) (objectstore.Store, error)) (capture *kubeobjects.Capture, from string, unavailable, refused []string) {
	for _, profile := range vrg.Spec.S3Profiles {
		store, err := storeOf(profile)
		var body []byte
		key := StorePrefix(vrg) + kubeobjects.StoreKey
		if err == nil {
			key, err = DataPrefix(ctx, store, vrg)
			key += kubeobjects.StoreKey
		}
		if err == nil {
			body, err = store.Get(ctx, key)
		}
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			if from == "" {
				from = profile.Name
			}
			continue
		case errors.Is(err, objectstore.ErrRefused):
			refused = append(refused, err.Error())
			continue
		case err != nil:
			unavailable = append(unavailable, err.Error())
			continue
		}
		c, err := kubeobjects.Decode(body)
		if err != nil {
			refused = append(refused, objectstore.Refused(profile.Name, key, err).Error())
			continue
		}
		checked, err := kubeobjects.Check(c, ProtectedNamespaces(vrg), mapper)
		if err != nil {
			refused = append(refused, objectstore.Refused(profile.Name, key, err).Error())
			continue
		}
		if len(checked.Dropped) > 0 {
			ctrl.LoggerFrom(ctx).Info("Dropped captured objects that are never restored", "store", profile.Name, "objects", checked.Dropped)
		}
		c.Objects = checked.Objects
		return c, profile.Name, unavailable, refused
	}
	return nil, from, unavailable, refused
}

// removeWorkloads, on a group demoted by a failover or a relocation, deletes the application's
// workloads (the selected workload kinds in the protected namespaces) before demotePVCs checks
// the PVCs' consumers, so the pods go and the demotion needs no person; the PVCs stay. A
// relocation first writes a final capture from the demoting primary, so what changed since the
// last capture reaches the peer too. A secondary without action is left alone: nothing says
// the application must leave this cluster.
func (r *Reconciler) removeWorkloads(ctx context.Context, sc *scope) (ctrl.Result, error) {
	spec := sc.vrg.Spec.KubeObjectProtection
	if spec == nil {
		return ctrl.Result{}, nil
	}
	t := v1alpha1.ConditionKubeObjectsReady
	action := sc.vrg.Spec.Action
	if action != v1alpha1.ActionFailover && action != v1alpha1.ActionRelocate {
		sc.kubeObjectsReady = ptrTo(metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonSecondary,
			Message: "the group is secondary without an action: the application's objects here are left as they are"})
		return ctrl.Result{}, nil
	}
	sel, err := kubeobjects.NewSelection(spec)
	if err != nil {
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonInvalidSpec, err.Error()))
		return ctrl.Result{}, nil
	}
	final, err := r.finalCaptureDue(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if final {
		cr, _, err := r.writeCapture(ctx, sc, sel, time.Now(), true)
		if err != nil || !cr.written() {
			c := captureCondition(cr, err, false)
			sc.kubeObjectsReady = ptrTo(condition(t, false, c.Reason,
				"the workloads stay until the relocation's final capture is written: "+c.Message))
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("failed to write the final capture of VolumeReplicationGroup %s", klog.KObj(sc.vrg)))
		}
		if err := r.annotate(ctx, sc, AnnotationKubeObjectsFinalCapture, generation(sc.vrg)); err != nil {
			return ctrl.Result{}, err
		}
	}
	resources, _, err := sel.Workloads().Resolve(r.Client.RESTMapper())
	if err != nil {
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonError, err.Error()))
		return ctrl.Result{}, err
	}
	namespaces := protectedNamespaces(sc.vrg)
	var remaining []string
	// A settled secondary (every group after its first failover or relocation) is woken at
	// each sync of its storage: the watch of the workloads' metadata spares it five lists.
	if !kubeobjects.NoWorkloadsCached(ctx, r.Cache, resources, namespaces, sel) {
		remaining, err = r.deleteWorkloads(ctx, sc, resources, namespaces, sel)
	}
	if err != nil {
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonError, err.Error()))
		return ctrl.Result{}, err
	}
	if len(remaining) > 0 {
		ctrl.LoggerFrom(ctx).Info("Removing the application's workloads from a demoted cluster", "workloads", strings.Join(remaining, ", "))
		sc.kubeObjectsReady = ptrTo(condition(t, false, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"the group is secondary (action %s): deleting the workloads %s so their pods release the PVCs; the PVCs stay",
			action, strings.Join(remaining, ", "))))
		return ctrl.Result{RequeueAfter: requeueWaitingForConsumers}, nil
	}
	sc.kubeObjectsReady = ptrTo(condition(t, true, v1alpha1.ReasonSecondary, fmt.Sprintf(
		"the group is secondary (action %s): the application's workloads are removed from namespaces %s; their PVCs stay",
		action, strings.Join(namespaces, ", "))))
	return ctrl.Result{}, nil
}

// finalCaptureDue reports whether this pass writes a relocation's final capture. The group is
// read again from the API server first: a pass that began with a cached copy from before the
// final capture was recorded must not capture again, since by now the workloads may be deleted
// and a capture without them would replace the final one.
func (r *Reconciler) finalCaptureDue(ctx context.Context, sc *scope) (bool, error) {
	if sc.vrg.Spec.Action != v1alpha1.ActionRelocate || !needsFinalCapture(sc.vrg) {
		return false, nil
	}
	fresh := &v1alpha1.VolumeReplicationGroup{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sc.vrg), fresh); err != nil {
		return false, fmt.Errorf("failed to read VolumeReplicationGroup %s before its final capture: %w", klog.KObj(sc.vrg), err)
	}
	if fresh.Generation != sc.vrg.Generation {
		// Nothing is deleted on a spec this pass did not begin with; the next pass acts on it.
		return false, fmt.Errorf("VolumeReplicationGroup %s changed during this pass (generation %d, now %d): its workloads are removed on the next pass",
			klog.KObj(sc.vrg), sc.vrg.Generation, fresh.Generation)
	}
	if !needsFinalCapture(fresh) {
		return false, nil
	}
	return !r.staleDemotion(ctx, sc), nil
}

// needsFinalCapture reports whether a relocation's final capture is still to be written: only
// by a group that captured or restored the objects as primary and is still demoting (never by a
// secondary whose peer may be primary by now), once per generation. A group relocated within
// an interval of its promotion has restored but not captured yet, and the objects changed
// since the restore must move with it.
func needsFinalCapture(vrg *v1alpha1.VolumeReplicationGroup) bool {
	wasPrimary := vrg.Annotations[AnnotationKubeObjectsCapturedAt] != "" || vrg.Annotations[AnnotationKubeObjectsRestored] != ""
	return wasPrimary && vrg.Status.State != v1alpha1.StateSecondary &&
		vrg.Annotations[AnnotationKubeObjectsFinalCapture] != generation(vrg)
}

func generation(vrg *v1alpha1.VolumeReplicationGroup) string {
	return strconv.FormatInt(vrg.Generation, 10)
}

func ptrTo(c metav1.Condition) *metav1.Condition { return &c }
