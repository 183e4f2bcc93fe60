package vrg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Promotion (DESIGN.md, PVC rule 2): before a group promoted with action Failover or Relocate
// protects anything, the PVs and PVCs its primary stored are restored from the first S3 profile
// that can be read: PVs first, pre-bound to their claims, then the PVCs with spec.volumeName, so
// the workload's own PVC names bind to the replicated images and nothing else can take them.
// What an earlier failover left on this cluster is adopted when it matches and reported, never
// overwritten or deleted, when it does not. Every step observes what exists and creates only what
// is missing, so an agent restarted at any point continues where the last one stopped.

// restoreState is what one pass of the restore observed.
type restoreState struct {
	// done is true when the restore completed in an earlier pass of this generation; nothing
	// was read then.
	done bool
	// store is the S3 profile read; empty when none could be. prefix is where its marker named
	// the group's data.
	store, prefix string
	// unavailable are the profiles skipped, each with its error.
	unavailable []string
	// refused is set when a profile was skipped for an object it refused (too large, too many
	// keys, a PV or PVC stored under another's key).
	refused bool
	// conflicts are the PVCs that cannot be restored, by PVC key, with the reason and message.
	conflicts map[string]restoreConflict
	// unbound are the restored or adopted PVCs not Bound yet.
	unbound []string
	// failed are the PVCs whose restore or adoption failed in this pass, each with its error:
	// not restored, so the restore is not complete whatever the others did.
	failed []string
	// awaitingConsumer are restored PVCs of classes that bind on their first consumer, Pending
	// with their image held until they are Bound (firstconsumer.go): restored as far as the
	// cluster can tell before the application's pods come, so not in unbound.
	awaitingConsumer []string
	// restored and adopted count the PVs and PVCs created and the ones found matching.
	restored, adopted int
	// since is when this promotion claimed the group (its epoch); zero when unknown.
	since metav1.Time
	// floorWaiting is the scope's: what the namespace floor still waits for (floor.go).
	floorWaiting []string
	// leftovers name the adopted PVs and PVCs created before this promotion: what an earlier
	// failover left here (the others were created by an earlier pass of this promotion).
	leftovers []string
}

// adopt counts an existing object that matches the stored one, and names it when an earlier
// failover left it (created before this promotion claimed the group).
func (rs *restoreState) adopt(what string, created metav1.Time) {
	rs.adopted++
	if !rs.since.IsZero() && created.Before(&rs.since) {
		rs.leftovers = append(rs.leftovers, what)
	}
}

// restoreConflict says why one PVC cannot be restored.
type restoreConflict struct {
	reason, message string
}

// conflict returns the conflict of a PVC; none when the group is not restoring.
func (rs *restoreState) conflict(key string) (restoreConflict, bool) {
	if rs == nil {
		return restoreConflict{}, false
	}
	c, ok := rs.conflicts[key]
	return c, ok
}

// complete reports whether every stored PVC is restored or adopted and Bound. A PVC whose
// restore failed in this pass is none of these: the objects wait for it (a StatefulSet placed
// now would start its pod on what is there, a VolSync replica perhaps), and so do the removal
// of the ReplicationDestinations and the status's observedGeneration.
func (rs *restoreState) complete() bool {
	return rs.done || (rs.store != "" && len(rs.failed) == 0 && len(rs.conflicts) == 0 && len(rs.unbound) == 0 && len(rs.floorWaiting) == 0)
}

// promoting reports whether the group asks to become primary by a failover or a relocation,
// the cases in which the peer's PVs and PVCs are restored before protecting.
func promoting(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary &&
		(vrg.Spec.Action == v1alpha1.ActionFailover || vrg.Spec.Action == v1alpha1.ActionRelocate)
}

// restoreCompleted reports whether ClusterDataReady is True for the group's current generation.
// It is the one decision of the restore kept in the status: once the PVCs are restored, the
// application owns them and may delete some (a scale-down); restoring them again at every
// reconcile would undo that. A new action or state changes the generation and restores anew.
func restoreCompleted(vrg *v1alpha1.VolumeReplicationGroup) bool {
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionClusterDataReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == vrg.Generation
}

// restorePVCs restores the group's PVs and PVCs from the first readable S3 profile.
func (r *Reconciler) restorePVCs(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !promoting(sc.vrg) {
		return ctrl.Result{}, nil
	}
	sc.restore = &restoreState{conflicts: map[string]restoreConflict{}, floorWaiting: sc.floorWaiting}
	if sc.epoch != nil {
		sc.restore.since = sc.epoch.own.Since
	}
	if restoreCompleted(sc.vrg) {
		sc.restore.done = true
		r.written.setRestoreRead(sc.vrg, nil)
		return ctrl.Result{}, nil
	}
	pvs, pvcs := r.readMetadata(ctx, sc)
	if sc.restore.store == "" {
		return ctrl.Result{}, fmt.Errorf("failed to read the metadata of VolumeReplicationGroup %s from any S3 profile: %s",
			klog.KObj(sc.vrg), strings.Join(sc.restore.unavailable, "; "))
	}
	var errs []error
	for _, pvc := range pvcs {
		key := pvc.Namespace + "/" + pvc.Name
		if c := checkStoredPVC(sc.vrg, sc.restore.store, sc.restore.prefix, pvc); c != nil {
			sc.restore.conflicts[key] = *c
			continue
		}
		if err := r.restoreOnePVC(ctx, sc, pvc, pvs[pvc.Spec.VolumeName]); err != nil {
			sc.restore.failed = append(sc.restore.failed, fmt.Sprintf("%s: %v", key, err))
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if len(sc.restore.unbound) > 0 {
		return ctrl.Result{RequeueAfter: requeueWaitingForStorage}, nil
	}
	if len(sc.restore.conflicts) > 0 {
		return ctrl.Result{RequeueAfter: requeueAfterFailure}, nil
	}
	r.written.setRestoreRead(sc.vrg, nil)
	return ctrl.Result{}, nil
}

// restoreOnePVC restores or adopts one stored PVC (VolSync's from its destination's image, the
// others with their stored PV); a conflict lands in sc.restore, an error is returned.
func (r *Reconciler) restoreOnePVC(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if handled, err := r.restoreVolSyncPVC(ctx, sc, pvc, pv); handled {
		return err
	}
	if pv != nil {
		checked, c, err := r.checkedPV(ctx, sc.vrg, sc.restore.store, sc.restore.prefix, pvc, pv)
		if c != nil {
			sc.restore.conflicts[pvc.Namespace+"/"+pvc.Name] = *c
		}
		if err != nil || c != nil {
			return err
		}
		pv = checked
	}
	return r.restorePVC(ctx, sc.restore, pvc, pv)
}

// readMetadata reads the stored PVs (by name) and PVCs (sorted by key) from the first S3
// profile, in spec order, that answers every read; the profiles skipped are recorded. What a
// pass of this generation read already is not read again (storedMetadata).
func (r *Reconciler) readMetadata(ctx context.Context, sc *scope) (map[string]*corev1.PersistentVolume, []*corev1.PersistentVolumeClaim) {
	if m := r.written.restoreRead(sc.vrg); m != nil {
		sc.restore.store, sc.restore.prefix, sc.restore.unavailable = m.store, m.prefix, slices.Clone(m.unavailable)
		return m.pvs, m.pvcs
	}
	for _, profile := range sc.vrg.Spec.S3Profiles {
		store, err := r.store(ctx, profile)
		var prefix string
		if err == nil {
			prefix, err = DataPrefix(ctx, store, sc.vrg)
		}
		if err == nil {
			var pvs map[string]*corev1.PersistentVolume
			var pvcs []*corev1.PersistentVolumeClaim
			if pvs, pvcs, err = ReadMetadata(ctx, store, prefix); err == nil {
				sc.restore.store, sc.restore.prefix = profile.Name, prefix
				r.written.setRestoreRead(sc.vrg, &storedMetadata{generation: sc.vrg.Generation, store: profile.Name, prefix: prefix,
					unavailable: slices.Clone(sc.restore.unavailable), pvs: pvs, pvcs: pvcs})
				return pvs, pvcs
			}
		}
		sc.restore.unavailable = append(sc.restore.unavailable, err.Error())
		sc.restore.refused = sc.restore.refused || errors.Is(err, objectstore.ErrRefused)
	}
	return nil, nil
}

// ReadMetadata reads every PV and PVC stored under a group's prefix: the PVs by name, the PVCs
// sorted by namespace and name. Any failure fails the whole read, so a restore never acts on
// part of a group.
func ReadMetadata(ctx context.Context, store objectstore.Store, prefix string) (map[string]*corev1.PersistentVolume, []*corev1.PersistentVolumeClaim, error) {
	pvs := map[string]*corev1.PersistentVolume{}
	keys, err := store.List(ctx, prefix+pvsDir)
	if err != nil {
		return nil, nil, err
	}
	for _, key := range keys {
		pv := &corev1.PersistentVolume{}
		if err := getJSON(ctx, store, key, pv); err != nil {
			return nil, nil, err
		}
		if key != PVKey(prefix, pv.Name) {
			return nil, nil, objectstore.Refused(store.Name(), key, fmt.Errorf("it holds PV %q, which drover stores at %s", pv.Name, PVKey(prefix, pv.Name)))
		}
		pvs[pv.Name] = pv
	}
	keys, err = store.List(ctx, prefix+pvcsDir)
	if err != nil {
		return nil, nil, err
	}
	var pvcs []*corev1.PersistentVolumeClaim
	for _, key := range keys {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := getJSON(ctx, store, key, pvc); err != nil {
			return nil, nil, err
		}
		if want := PVCKey(prefix, pvc.Namespace, pvc.Name); key != want {
			return nil, nil, objectstore.Refused(store.Name(), key, fmt.Errorf("it holds PVC %s/%s, which drover stores at %s", pvc.Namespace, pvc.Name, want))
		}
		pvcs = append(pvcs, pvc)
	}
	slices.SortFunc(pvcs, func(a, b *corev1.PersistentVolumeClaim) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pvs, pvcs, nil
}

func getJSON(ctx context.Context, store objectstore.Store, key string, into any) error {
	body, err := store.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, into); err != nil {
		return objectstore.Refused(store.Name(), key, fmt.Errorf("it cannot be decoded: %w", err))
	}
	return nil
}

// restorePVC restores or adopts one stored PVC and its PV. A mismatch lands in rs.conflicts;
// API failures are returned.
func (r *Reconciler) restorePVC(ctx context.Context, rs *restoreState, stored *corev1.PersistentVolumeClaim, storedPV *corev1.PersistentVolume) error {
	key := stored.Namespace + "/" + stored.Name
	if storedPV == nil {
		rs.conflicts[key] = restoreConflict{v1alpha1.ReasonPVConflict, fmt.Sprintf(
			"the stored metadata of PVC %s names PV %q, which S3 profile %s does not hold: the primary wrote an incomplete group; protect it again there",
			key, stored.Spec.VolumeName, rs.store)}
		return nil
	}
	if c, err := r.restorePV(ctx, rs, storedPV); err != nil || c != nil {
		if c != nil {
			rs.conflicts[key] = *c
		}
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(stored), pvc)
	switch {
	case apierrors.IsNotFound(err):
		pvc = restoredPVC(stored)
		if err := r.Client.Create(ctx, pvc, client.FieldOwner(fieldOwner)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Created by an earlier pass and not in the cache yet: look again shortly.
				rs.unbound = append(rs.unbound, key)
				return nil
			}
			return fmt.Errorf("failed to restore PVC %s: %w", key, err)
		}
		ctrl.LoggerFrom(ctx).Info("Restored PVC", "pvc", klog.KObj(pvc), "pv", pvc.Spec.VolumeName)
		rs.restored++
		rs.unbound = append(rs.unbound, key)
		return nil
	case err != nil:
		return fmt.Errorf("failed to get PVC %s: %w", key, err)
	}
	if !pvc.DeletionTimestamp.IsZero() {
		// Deleted here (while this cluster was secondary, its replica kept): not adopted, since
		// it goes; the PVC is restored onto the kept PV once it has gone.
		rs.unbound = append(rs.unbound, key+" (being deleted here; restored once it is gone)")
		return nil
	}
	if msg := pvcMismatch(pvc, stored); msg != "" {
		rs.conflicts[key] = restoreConflict{v1alpha1.ReasonPVCConflict, msg}
		return nil
	}
	rs.adopt("PVC "+key, pvc.CreationTimestamp)
	if pvc.Status.Phase != corev1.ClaimBound {
		rs.unbound = append(rs.unbound, key)
	}
	return nil
}

// restorePV creates the stored PV or adopts the one of that name; it returns the conflict when
// the existing PV does not match.
func (r *Reconciler) restorePV(ctx context.Context, rs *restoreState, stored *corev1.PersistentVolume) (*restoreConflict, error) {
	pv := &corev1.PersistentVolume{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: stored.Name}, pv)
	switch {
	case apierrors.IsNotFound(err):
		pv = restoredPV(stored)
		if err := r.Client.Create(ctx, pv, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to restore PV %s: %w", stored.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Restored PV", "pv", stored.Name)
		rs.restored++
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get PV %s: %w", stored.Name, err)
	}
	if msg := pvMismatch(pv, stored); msg != "" {
		return &restoreConflict{v1alpha1.ReasonPVConflict, msg}, nil
	}
	rs.adopt("PV "+pv.Name, pv.CreationTimestamp)
	return nil, r.releaseStaleClaim(ctx, pv)
}

// releaseStaleClaim clears the claimRef uid of an adopted PV whose claim no longer exists.
//
// Why: a PV left by an earlier failover may still name, by uid, a PVC that someone deleted
// since. The PV controller then holds the PV Released and never binds it to the new PVC of the
// same name (the uid differs), so the workload would hang Pending. Clearing the uid (and the
// resourceVersion) makes the PV pre-bound to the namespace/name again, and the PV controller
// binds it to the restored PVC. The data is untouched: the reclaim policy is Retain (drover set
// it when it protected the volume), so the Released PV was never reclaimed. A claimRef uid that
// names an existing PVC is left alone: that PVC is bound to this PV.
func (r *Reconciler) releaseStaleClaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, pvc)
	switch {
	case err == nil && pvc.UID == ref.UID:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to get PVC %s/%s of PV %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	}
	before := pv.DeepCopy()
	pv.Spec.ClaimRef.UID, pv.Spec.ClaimRef.ResourceVersion = "", ""
	if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to release PV %s from its deleted claim %s/%s: %w", pv.Name, ref.Namespace, ref.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Released adopted PV from a deleted claim", "pv", pv.Name, "claim", ref.Namespace+"/"+ref.Name)
	return nil
}

// restoredPV is the PV to create from its stored form: pre-bound to its claim by
// namespace/name only, and retained, so deleting the restored PVC never deletes the image.
func restoredPV(stored *corev1.PersistentVolume) *corev1.PersistentVolume {
	pv := stored.DeepCopy()
	pv.TypeMeta = metav1.TypeMeta{}
	if ref := pv.Spec.ClaimRef; ref != nil {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: ref.Kind, APIVersion: ref.APIVersion, Namespace: ref.Namespace, Name: ref.Name}
	}
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	pv.Status = corev1.PersistentVolumeStatus{}
	return pv
}

// restoredPVC is the PVC to create from its stored form, with spec.volumeName set and no data
// source: it binds the replicated volume and is populated from nothing else.
func restoredPVC(stored *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	pvc := stored.DeepCopy()
	pvc.TypeMeta = metav1.TypeMeta{}
	pvc.Spec.DataSource, pvc.Spec.DataSourceRef = nil, nil
	pvc.Status = corev1.PersistentVolumeClaimStatus{}
	return pvc
}

// pvMismatch says how an existing PV differs from the stored one of the same name, in the
// fields that make it the same volume for the same claim, or "" when it matches.
func pvMismatch(existing, stored *corev1.PersistentVolume) string {
	var diffs []string
	driver, handle := csiOf(existing)
	wantDriver, wantHandle := csiOf(stored)
	if driver != wantDriver {
		diffs = append(diffs, fmt.Sprintf("CSI driver %q, not %q", driver, wantDriver))
	}
	if handle != wantHandle {
		diffs = append(diffs, fmt.Sprintf("volume handle %q, not %q", handle, wantHandle))
	}
	if claim, want := claimOf(existing), claimOf(stored); claim != want {
		diffs = append(diffs, fmt.Sprintf("claimRef %q, not %q", claim, want))
	}
	if !slices.Equal(existing.Spec.AccessModes, stored.Spec.AccessModes) {
		diffs = append(diffs, fmt.Sprintf("access modes %v, not %v", existing.Spec.AccessModes, stored.Spec.AccessModes))
	}
	if mode, want := volumeMode(existing.Spec.VolumeMode), volumeMode(stored.Spec.VolumeMode); mode != want {
		diffs = append(diffs, fmt.Sprintf("volume mode %s, not %s", mode, want))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("PV %s exists on this cluster with %s: drover does not overwrite it; delete or rename it if it is not needed, and the restore continues",
		existing.Name, strings.Join(diffs, ", "))
}

// pvcMismatch says how an existing PVC differs from the stored one: it must be bound, or
// pre-bound by spec.volumeName, to the stored volume. "" when it matches.
func pvcMismatch(existing, stored *corev1.PersistentVolumeClaim) string {
	if existing.Spec.VolumeName == stored.Spec.VolumeName {
		return ""
	}
	bound := fmt.Sprintf("is bound to PV %q", existing.Spec.VolumeName)
	if existing.Spec.VolumeName == "" {
		bound = "is not bound to any PV"
	}
	return fmt.Sprintf("PVC %s/%s exists on this cluster and %s, not to the replicated PV %q: drover does not overwrite it; delete it (and its data) if it is not needed, and the restore continues",
		existing.Namespace, existing.Name, bound, stored.Spec.VolumeName)
}

func csiOf(pv *corev1.PersistentVolume) (driver, handle string) {
	if pv.Spec.CSI == nil {
		return "", ""
	}
	return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
}

func claimOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return ""
	}
	return pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
}

// volumeMode is the PV's volume mode, Filesystem when unset (the API's default).
func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

// clusterDataReadyCondition is ClusterDataReady of a promoting group whose restore ran in this
// pass: True once every stored PVC is restored or adopted and Bound.
func clusterDataReadyCondition(rs *restoreState) metav1.Condition {
	t := v1alpha1.ConditionClusterDataReady
	skipped := ""
	if len(rs.unavailable) > 0 {
		skipped = "; skipped: " + strings.Join(rs.unavailable, "; ")
	}
	if rs.store == "" {
		reason := v1alpha1.ReasonStoreUnavailable
		if rs.refused {
			reason = v1alpha1.ReasonStoreObjectRefused
		}
		return condition(t, false, reason, "no S3 profile could be read; drover retries: "+strings.Join(rs.unavailable, "; "))
	}
	if len(rs.failed) > 0 {
		// Never True while a PVC failed: the application would be placed without it.
		return condition(t, false, v1alpha1.ReasonError, andMore("restoring from S3 profile "+rs.store+" failed for PVC "+rs.failed[0]+"; drover retries", len(rs.failed)))
	}
	if len(rs.conflicts) > 0 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range rs.conflicts {
				if !yield(k) {
					return
				}
			}
		})
		first := rs.conflicts[keys[0]]
		return condition(t, false, first.reason, andMore(first.message, len(keys)))
	}
	if len(rs.unbound) > 0 {
		return condition(t, false, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"restored from S3 profile %s; waiting for PVCs %s to bind%s", rs.store, strings.Join(rs.unbound, ", "), skipped))
	}
	if len(rs.floorWaiting) > 0 {
		return condition(t, false, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"restored from S3 profile %s; nothing runs in the namespaces before the administrator's floor (ResourceQuota and LimitRange %s) is in force: waiting for %s%s",
			rs.store, FloorName, strings.Join(rs.floorWaiting, ", "), skipped))
	}
	if len(rs.awaitingConsumer) > 0 {
		skipped = fmt.Sprintf("; PVCs %s bind on their first consumer, restored from VolSync images held until they are Bound",
			strings.Join(rs.awaitingConsumer, ", ")) + skipped
	}
	return condition(t, true, v1alpha1.ReasonSucceeded, fmt.Sprintf(
		"the PVs and PVCs are restored from S3 profile %s (%d objects created, %d adopted)%s", rs.store, rs.restored, rs.adopted, skipped))
}
