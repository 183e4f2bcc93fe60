package vrg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// The final sync of a relocation for a backend that syncs on demand (VolSync; DESIGN.md, PVC
// rule 5). demotePVC calls finalSyncPVC once the PVC has no consumer and the fence holds:
//
//   - a PVC that still exists syncs one last time from itself (FinalSyncer.FinalSync: the
//     schedule stops, then two manual triggers derived from spec.finalSyncRequest, the first
//     ending any sync that began before the workload stopped, the second starting one after
//     it; done when the source reports lastManualSync equal to the second, which VolSync
//     records only after the destination applied it; internal/replication/volsync/finalsync.go
//     says why one trigger is not enough);
//   - a PVC the workload deleted (kept by drover's finalizer while the final sync is asked) cannot
//     be mounted by a mover any more, but its PV is retained (drover set Retain while
//     protecting). The agent records the PV's claimRef in AnnotationFinalSyncClaimRef and
//     labels the PV with the group, creates the DR-owned PVC volsync.FinalSyncPVCName(pvc)
//     pre-bound to the PV, and lets the deleted PVC go (removes its finalizer). From then on the
//     PV carries the state, and continueVolSyncFinalSyncs drives it every pass: point the PV's
//     claimRef at the DR-owned PVC (no uid, so the PV controller binds it), run the final sync
//     from it, record it (AnnotationFinalSynced), delete the DR-owned PVC, and give the PV back
//     its recorded claimRef and original reclaim policy. status.finalSync waits until every
//     such PV is given back.
const (
	// LabelFinalSyncGroup marks a PV whose final sync runs from a DR-owned PVC with the name of
	// the group; LabelFinalSyncGroupNamespace with its namespace.
	LabelFinalSyncGroup          = "drover.io/final-sync-vrg-name"
	LabelFinalSyncGroupNamespace = "drover.io/final-sync-vrg-namespace"
	// AnnotationFinalSyncClaimRef records on such a PV, as JSON, the claimRef it had before the
	// DR-owned PVC took it.
	AnnotationFinalSyncClaimRef = "drover.io/final-sync-claim-ref"
	// AnnotationFinalSynced records on such a PV the spec.finalSyncRequest its final sync
	// answered.
	AnnotationFinalSynced = "drover.io/final-synced"
)

// requeueFinalSync: a DR-owned PVC's binding or final sync is under way.
const requeueFinalSync = time.Second

// finalSyncPVC runs the final sync of one PVC of a relocation's old primary with a backend that
// syncs on demand. Done once it is recorded or not asked.
func (r *Reconciler) finalSyncPVC(ctx context.Context, sc *scope, pc *replication.PVCContext, fs replication.FinalSyncer) replication.Result {
	if !finalSyncOpen(sc.vrg) {
		return replication.Done()
	}
	if pc.PVC.DeletionTimestamp.IsZero() {
		return fs.FinalSync(ctx, pc)
	}
	if err := r.handOverToFinalSyncPVC(ctx, sc, pc); err != nil {
		return replication.Retry(requeueWaitingForStorage, v1alpha1.ReasonError, err.Error())
	}
	return replication.Retry(requeueFinalSync, v1alpha1.ReasonProgressing, fmt.Sprintf(
		"PVC %s/%s was deleted: its final sync runs from the DR-owned PVC %s bound to its retained PV %s",
		pc.PVC.Namespace, pc.PVC.Name, volsync.FinalSyncPVCName(pc.PVC.Name), pc.PV.Name))
}

// handOverToFinalSyncPVC records the deleted PVC's binding on its PV, creates the DR-owned PVC
// and lets the deleted PVC go. Each step observes first, so a pass repeats none.
func (r *Reconciler) handOverToFinalSyncPVC(ctx context.Context, sc *scope, pc *replication.PVCContext) error {
	pvc, pv := pc.PVC, pc.PV
	if pv.Labels[LabelFinalSyncGroup] != sc.vrg.Name {
		before := pv.DeepCopy()
		ref := pv.Spec.ClaimRef
		if ref == nil {
			ref = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
		}
		raw, err := json.Marshal(ref)
		if err != nil {
			return fmt.Errorf("failed to record the claimRef of PV %s: %w", pv.Name, err)
		}
		metav1.SetMetaDataAnnotation(&pv.ObjectMeta, AnnotationFinalSyncClaimRef, string(raw))
		metav1.SetMetaDataLabel(&pv.ObjectMeta, LabelFinalSyncGroup, sc.vrg.Name)
		metav1.SetMetaDataLabel(&pv.ObjectMeta, LabelFinalSyncGroupNamespace, sc.vrg.Namespace)
		if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to record the final sync on PV %s: %w", pv.Name, err)
		}
	}
	if err := r.ensureFinalSyncPVC(ctx, sc, pvc.Namespace, pvc.Name, pv, pvc.Spec); err != nil {
		return err
	}
	if controllerutil.ContainsFinalizer(pvc, PVCFinalizer) {
		before := pvc.DeepCopy()
		controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
		if err := r.Client.Patch(ctx, pvc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to release deleted PVC %s: %w", klog.KObj(pvc), err)
		}
		ctrl.LoggerFrom(ctx).Info("Released deleted PVC; its final sync runs from a DR-owned PVC", "pvc", klog.KObj(pvc), "pv", pv.Name)
	}
	return nil
}

// ensureFinalSyncPVC creates the DR-owned PVC of a PV unless it exists.
func (r *Reconciler) ensureFinalSyncPVC(ctx context.Context, sc *scope, namespace, of string, pv *corev1.PersistentVolume, spec corev1.PersistentVolumeClaimSpec) error {
	name := volsync.FinalSyncPVCName(of)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("failed to get PVC %s/%s: %w", namespace, name, err)
		}
		return nil
	}
	dr := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: volsync.GroupLabels(sc.vrg),
			Annotations: map[string]string{volsync.AnnotationFinalSyncOf: of},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: spec.AccessModes, Resources: spec.Resources, StorageClassName: spec.StorageClassName,
			VolumeMode: spec.VolumeMode, VolumeName: pv.Name,
		},
	}
	if err := r.Client.Create(ctx, dr, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create DR-owned PVC %s/%s for the final sync of PV %s: %w", namespace, name, pv.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created DR-owned PVC for a final sync", "pvc", klog.KObj(dr), "pv", pv.Name)
	return nil
}

// continueVolSyncFinalSyncs drives every PV whose final sync runs from a DR-owned PVC: bind,
// sync, record, then give the PV back. Each one not given back yet is pending, and
// finishRelocation waits for none to be.
func (r *Reconciler) continueVolSyncFinalSyncs(ctx context.Context, sc *scope) (ctrl.Result, error) {
	vs := r.volSync()
	if vs == nil {
		return ctrl.Result{}, nil
	}
	pvs := &corev1.PersistentVolumeList{}
	if err := r.Client.List(ctx, pvs, client.MatchingLabels{LabelFinalSyncGroup: sc.vrg.Name, LabelFinalSyncGroupNamespace: sc.vrg.Namespace}); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list the PVs of final syncs: %w", err)
	}
	var errs []error
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		sc.finalSyncPending = append(sc.finalSyncPending, pv.Name)
		if err := r.continueFinalSync(ctx, sc, vs, pv); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if len(pvs.Items) > 0 {
		return ctrl.Result{RequeueAfter: requeueFinalSync}, nil
	}
	return ctrl.Result{}, nil
}

// continueFinalSync takes one PV one step further.
func (r *Reconciler) continueFinalSync(ctx context.Context, sc *scope, vs *volsync.Backend, pv *corev1.PersistentVolume) error {
	original := &corev1.ObjectReference{}
	if err := json.Unmarshal([]byte(pv.Annotations[AnnotationFinalSyncClaimRef]), original); err != nil {
		return fmt.Errorf("failed to read annotation %s of PV %s: %w", AnnotationFinalSyncClaimRef, pv.Name, err)
	}
	ns, drName := original.Namespace, volsync.FinalSyncPVCName(original.Name)
	request := sc.vrg.Spec.FinalSyncRequest
	if finalSyncOpen(sc.vrg) && pv.Annotations[AnnotationFinalSynced] != request {
		dr, err := r.bindFinalSyncPVC(ctx, sc, pv, original)
		if err != nil || dr == nil {
			return err
		}
		pc := &replication.PVCContext{VRG: sc.vrg, PVC: dr, PV: pv, StorageClassName: ptrString(dr.Spec.StorageClassName), Interval: sc.interval,
			MoverSecurityContext: groupMoverUser(sc.vrg, ns, original.Name)}
		if pc.Provisioner, err = r.provisioner(ctx, pc.StorageClassName, pv); err != nil {
			return err
		}
		res := vs.FinalSync(ctx, pc)
		if !res.IsDone() {
			ctrl.LoggerFrom(ctx).V(1).Info("Final sync from a DR-owned PVC", "pvc", klog.KObj(dr), "result", res.String())
			return nil
		}
		ctrl.LoggerFrom(ctx).Info("Final sync from a DR-owned PVC completed", "pvc", klog.KObj(dr), "pv", pv.Name)
		return r.patchPVAnnotation(ctx, pv, AnnotationFinalSynced, request)
	}
	// Synced (or no longer asked): the DR-owned PVC goes, then the PV is given back.
	dr := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: drName}, dr)
	switch {
	case err == nil:
		if dr.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, dr); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to delete DR-owned PVC %s/%s: %w", ns, drName, err)
			}
			ctrl.LoggerFrom(ctx).Info("Deleted DR-owned PVC after its final sync", "pvc", klog.KObj(dr))
		}
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to get DR-owned PVC %s/%s: %w", ns, drName, err)
	}
	if res := vs.DeleteSource(ctx, sc.vrg, ns, original.Name); !res.IsDone() {
		return nil
	}
	before := pv.DeepCopy()
	pv.Spec.ClaimRef = original
	if policy, ok := pv.Annotations[AnnotationOriginalReclaimPolicy]; ok && policy != "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(policy)
	}
	for _, a := range []string{AnnotationOriginalReclaimPolicy, AnnotationFinalSyncClaimRef, AnnotationFinalSynced} {
		delete(pv.Annotations, a)
	}
	delete(pv.Labels, LabelFinalSyncGroup)
	delete(pv.Labels, LabelFinalSyncGroupNamespace)
	if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to give PV %s back its claimRef and reclaim policy: %w", pv.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Gave a PV back its claimRef and reclaim policy after its final sync", "pv", pv.Name,
		"claim", original.Namespace+"/"+original.Name, "reclaimPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
	return nil
}

// bindFinalSyncPVC returns the DR-owned PVC of a PV once it is Bound to it, pointing the PV's
// claimRef at it once the deleted PVC is gone; nil while that is under way.
func (r *Reconciler) bindFinalSyncPVC(ctx context.Context, sc *scope, pv *corev1.PersistentVolume, original *corev1.ObjectReference) (*corev1.PersistentVolumeClaim, error) {
	ns, drName := original.Namespace, volsync.FinalSyncPVCName(original.Name)
	dr := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: drName}, dr)
	if apierrors.IsNotFound(err) {
		spec := corev1.PersistentVolumeClaimSpec{
			AccessModes: pv.Spec.AccessModes, StorageClassName: &pv.Spec.StorageClassName, VolumeMode: pv.Spec.VolumeMode,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}},
		}
		return nil, r.ensureFinalSyncPVC(ctx, sc, ns, original.Name, pv, spec)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get DR-owned PVC %s/%s: %w", ns, drName, err)
	}
	if dr.Status.Phase == corev1.ClaimBound && dr.Spec.VolumeName == pv.Name {
		return dr, nil
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != drName || ref.Namespace != ns {
		// The deleted PVC must be gone first: the PV is its until then.
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: original.Namespace, Name: original.Name}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
			return nil, client.IgnoreNotFound(err)
		}
		before := pv.DeepCopy()
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: drName}
		if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			return nil, fmt.Errorf("failed to bind PV %s to DR-owned PVC %s/%s: %w", pv.Name, ns, drName, err)
		}
		ctrl.LoggerFrom(ctx).Info("Bound a retained PV to a DR-owned PVC for its final sync", "pv", pv.Name, "pvc", ns+"/"+drName)
	}
	return nil, nil
}

// patchPVAnnotation sets one annotation of a PV.
func (r *Reconciler) patchPVAnnotation(ctx context.Context, pv *corev1.PersistentVolume, key, value string) error {
	before := pv.DeepCopy()
	metav1.SetMetaDataAnnotation(&pv.ObjectMeta, key, value)
	if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to annotate PV %s: %w", pv.Name, err)
	}
	return nil
}
