package vrg

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	"github.com/drover-io/drover/internal/replication"
)

// reconcileDelete unprotects the group's PVCs (DESIGN.md, PVC rule 6): their replication is
// removed, their PVs' reclaim policies restored, their label and finalizer removed, and the
// group's metadata deleted from every store; the PVCs and their data stay. The group's finalizer
// goes last, once all of that is done. The status says only what the deletion waits for
// (reportUnprotecting); the storage may keep a VolumeReplication (volrep.Backend.Cleanup). What the group
// protects is listed from the API server, not the cache: a cache that has not yet seen a PVC
// the group just protected would let the group go with that PVC still carrying its finalizer
// (stale_test.go).
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sc.vrg, Finalizer) {
		return ctrl.Result{}, nil
	}
	var errs []error
	var waits []replication.Result
	for _, ns := range protectedNamespaces(sc.vrg) {
		list := &corev1.PersistentVolumeClaimList{}
		if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelProtectedBy: sc.vrg.Name}); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to list protected PVCs in namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			if !ownedBy(list.Items[i].Labels, sc.vrg) {
				continue // another namespace's group of the same name
			}
			res, err := r.unprotectPVC(ctx, sc, &list.Items[i])
			if err != nil {
				errs = append(errs, err)
			}
			if !res.IsDone() {
				waits = append(waits, res)
			}
		}
	}
	kept, err := r.releaseKeptReplicas(ctx, sc)
	if err != nil {
		errs = append(errs, err)
	}
	waits = append(waits, kept...)
	pending := len(waits) > 0
	if err := r.reportUnprotecting(ctx, sc, waits); err != nil {
		errs = append(errs, err)
	}
	if done, err := r.unprotectVolSync(ctx, sc); err != nil {
		errs = append(errs, err)
	} else if !done {
		pending = true
	}
	if _, recorded := sc.vrg.Annotations[AnnotationPrivilegedMovers]; recorded {
		if err := r.setMoverPrivileges(ctx, sc.vrg, false); err != nil {
			errs = append(errs, err)
		}
	}
	for _, profile := range sc.vrg.Spec.S3Profiles {
		if err := r.deleteStoredGroup(ctx, sc, profile); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete the metadata of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if pending {
		return ctrl.Result{RequeueAfter: requeueWaitingForStorage}, nil
	}
	if r.Fence {
		for _, ns := range protectedNamespaces(sc.vrg) {
			nsObj, _, err := webhook.SetNamespaceFence(ctx, r.Client, ns, false)
			if err != nil {
				return ctrl.Result{}, err
			}
			r.namespaces.Seen(nsObj)
		}
	}
	before := sc.vrg.DeepCopy()
	controllerutil.RemoveFinalizer(sc.vrg, Finalizer)
	if err := r.Client.Patch(ctx, sc.vrg, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to remove finalizer from VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	r.versions.Forget(client.ObjectKeyFromObject(sc.vrg))
	r.written.forget(client.ObjectKeyFromObject(sc.vrg))
	ctrl.LoggerFrom(ctx).Info("Unprotected VolumeReplicationGroup")
	return ctrl.Result{}, nil
}

// reportUnprotecting writes, while the group is unprotected, what holds its deletion: DataReady
// False with the reason and message of the first PVC it waits for, and a Warning event when
// that reason turns ReplicationNotReleased (the storage keeps a VolumeReplication: the message
// says what releases it). The hub repeats it in the DRPlacementControl. Nothing is written
// while nothing waits: the group is about to go.
func (r *Reconciler) reportUnprotecting(ctx context.Context, sc *scope, waits []replication.Result) error {
	if len(waits) == 0 {
		return nil
	}
	first := waits[0]
	for _, w := range waits {
		if w.Reason == v1alpha1.ReasonReplicationNotReleased {
			first = w
			break
		}
	}
	msg := "unprotecting: " + first.Message
	if len(waits) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(waits)-1)
	}
	setCondition(sc.vrg, &sc.vrg.Status.Conditions, v1alpha1.ConditionDataReady, false, first.Reason, msg)
	if equality.Semantic.DeepEqual(sc.before.Status, sc.vrg.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sc.vrg, client.MergeFrom(sc.before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch status of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	r.versions.Seen(sc.vrg)
	if c, ok := turned(sc.before.Status.Conditions, sc.vrg.Status.Conditions, v1alpha1.ConditionDataReady, metav1.ConditionFalse); ok &&
		c.Reason == v1alpha1.ReasonReplicationNotReleased {
		r.event(sc, corev1.EventTypeWarning, v1alpha1.EventReplicationNotReleased, "%s", c.Message)
	}
	return nil
}

// unprotectPVC removes one PVC's replication, restores its PV's reclaim policy and then removes
// its protection marks. It returns Done once the PVC is fully unprotected, else what it waits for.
func (r *Reconciler) unprotectPVC(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) (replication.Result, error) {
	var pv *corev1.PersistentVolume
	if pvc.Spec.VolumeName != "" {
		pv = &corev1.PersistentVolume{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return replication.Result{}, fmt.Errorf("failed to get PV %s of PVC %s: %w", pvc.Spec.VolumeName, klog.KObj(pvc), err)
			}
			pv = nil
		}
	}
	if pv != nil {
		className := ""
		if pvc.Spec.StorageClassName != nil {
			className = *pvc.Spec.StorageClassName
		}
		provisioner, err := r.provisioner(ctx, className, pv)
		if err != nil {
			return replication.Result{}, err
		}
		// A class that selects no backend, or one this agent lacks, has nothing to clean up.
		if backend, err := r.Backends.Select(sc.vrg.Spec.StorageClassBackends, className, provisioner); err == nil {
			if cleaner, ok := backend.(replication.Cleaner); ok {
				pc := &replication.PVCContext{VRG: sc.vrg, PVC: pvc, PV: pv, StorageClassName: className, Provisioner: provisioner}
				if !sc.vrg.DeletionTimestamp.IsZero() {
					// Only the group's unprotection removes a consistency group's replication; a
					// member its owner deleted leaves the group by losing its label (below).
					pc.Group = labelledGroup(sc.vrg, pvc.Labels)
				}
				if res := cleaner.Cleanup(ctx, pc); !res.IsDone() {
					ctrl.LoggerFrom(ctx).V(1).Info("Waiting for replication cleanup", "pvc", klog.KObj(pvc), "result", res.String())
					return res, nil
				}
			}
		}
		if err := r.restoreReclaimPolicy(ctx, pv); err != nil {
			return replication.Result{}, err
		}
	}
	before := pvc.DeepCopy()
	controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
	delete(pvc.Labels, LabelProtectedBy)
	delete(pvc.Labels, LabelProtectedByNamespace)
	delete(pvc.Labels, v1alpha1.LabelConsistencyGroup)
	delete(pvc.Annotations, v1alpha1.AnnotationConsistencyGroupHandle)
	if err := r.Client.Patch(ctx, pvc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return replication.Result{}, fmt.Errorf("failed to remove the protection of PVC %s: %w", klog.KObj(pvc), err)
	}
	return replication.Done(), nil
}

// restoreReclaimPolicy gives the PV back the reclaim policy recorded before drover set Retain.
func (r *Reconciler) restoreReclaimPolicy(ctx context.Context, pv *corev1.PersistentVolume) error {
	original, ok := pv.Annotations[AnnotationOriginalReclaimPolicy]
	if !ok {
		return nil
	}
	before := pv.DeepCopy()
	if original != "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(original)
	}
	delete(pv.Annotations, AnnotationOriginalReclaimPolicy)
	delete(pv.Labels, LabelProtectedBy)
	delete(pv.Labels, LabelProtectedByNamespace)
	if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to restore the reclaim policy of PV %s: %w", pv.Name, err)
	}
	return nil
}

// deleteStoredGroup deletes the group's prefix from one store, unless a newer primary owns it
// there: a marker naming a newer epoch than this group claimed, or the same epoch claimed by
// another cluster, means the prefix holds that primary's metadata and objects, which outlive
// this group (the deletion of a stale primary, or of a secondary that never claimed). Without
// a marker, the prefix is this group's own or from before the markers, and it goes. The marker
// goes last and only if it is still the version read first: a claim that lands while the rest
// is deleted keeps it, and that primary's next pass rewrites what it keeps in the store.
func (r *Reconciler) deleteStoredGroup(ctx context.Context, sc *scope, profile v1alpha1.S3Profile) error {
	log := ctrl.LoggerFrom(ctx)
	store, err := r.store(ctx, profile)
	if err != nil {
		return err
	}
	prefix := StorePrefix(sc.vrg)
	marker, version, err := ReadMarkerVersion(ctx, store, prefix)
	if err != nil {
		return err
	}
	own, err := r.ownMarker(sc.vrg)
	if err != nil {
		return err
	}
	if marker != nil && newerClaim(own, *marker) {
		log.Info("Leaving the group's objects in the S3 profile: a newer primary holds them",
			"store", profile.Name, "holder", marker.Cluster, "epoch", marker.Epoch, "ownEpoch", own.Epoch)
		return nil
	}
	keys, err := store.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if key == prefix+MarkerKey {
			continue
		}
		if err := store.Delete(ctx, key); err != nil {
			return err
		}
	}
	if marker == nil {
		return nil
	}
	now, nowVersion, err := ReadMarkerVersion(ctx, store, prefix)
	switch {
	case err != nil:
		return err
	case now == nil:
		return nil
	case nowVersion != version:
		log.Info("Leaving the group's marker in the S3 profile: another primary claimed the group meanwhile",
			"store", profile.Name, "holder", now.Cluster, "epoch", now.Epoch)
		return nil
	}
	return store.Delete(ctx, prefix+MarkerKey)
}

// ownMarker is the claim this group recorded (epoch 0 when it never claimed: a secondary, or a
// group from before the markers).
func (r *Reconciler) ownMarker(vrg *v1alpha1.VolumeReplicationGroup) (PrimaryMarker, error) {
	own := PrimaryMarker{Cluster: r.ClusterName}
	claim, err := epochClaimOf(vrg)
	if err != nil || claim == nil {
		return own, err
	}
	own.Epoch, own.Since = claim.Epoch, claim.Since
	return own, nil
}

// newerClaim reports whether a store's marker is a newer claim than the group's own: a higher
// epoch, or the same epoch claimed by another cluster.
func newerClaim(own, stored PrimaryMarker) bool {
	return stored.Epoch > own.Epoch || (stored.Epoch == own.Epoch && stored.Cluster != own.Cluster)
}
