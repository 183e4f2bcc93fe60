package vrg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
	"github.com/drover-io/drover/internal/tenancy"
)

// parseSpec checks what the API server cannot: that the group asks for a role this agent
// implements, and parses the interval.
func (r *Reconciler) parseSpec(ctx context.Context, sc *scope) (ctrl.Result, error) {
	spec := sc.vrg.Spec
	if spec.ReplicationState != v1alpha1.ReplicationStatePrimary && spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		sc.specProblem = fmt.Sprintf("replicationState %q is neither primary nor secondary", spec.ReplicationState)
		sc.stop = true
		return ctrl.Result{}, reconcile.TerminalError(errors.New(sc.specProblem))
	}
	d, err := spec.SchedulingInterval.Duration()
	if err != nil {
		sc.specProblem = "spec.schedulingInterval: " + err.Error()
		sc.stop = true
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if _, err := pvcSelector(sc.vrg); err != nil {
		sc.specProblem = fmt.Sprintf("spec.pvcSelector is invalid: %v", err)
		sc.stop = true
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if _, err := groupSelectors(sc.vrg); err != nil {
		sc.specProblem = err.Error()
		sc.stop = true
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	// The hub refuses such a group too; the agent does not rely on it (internal/tenancy).
	if ns := r.Tenancy.FirstSystem(protectedNamespaces(sc.vrg)); ns != "" {
		sc.specProblem = tenancy.SystemNamespaceMessage(ns)
		sc.stop = true
		return ctrl.Result{}, reconcile.TerminalError(errors.New(sc.specProblem))
	}
	msg, err := r.foreignNamespaces(ctx, sc.vrg)
	if err == nil && msg == "" {
		msg, err = r.privilegedMoversProblem(ctx, sc.vrg)
	}
	if err != nil || msg != "" {
		if err != nil {
			sc.stop = true
			return ctrl.Result{}, err
		}
		// Nothing wakes the group when its namespace is labelled (namespaces are not watched):
		// it looks again now and then.
		sc.specProblem, sc.specReason = msg, v1alpha1.ReasonNamespaceNotAllowed
		sc.stop = true
		return ctrl.Result{RequeueAfter: requeueNamespaceNotAllowed}, nil
	}
	sc.interval = d
	return ctrl.Result{}, nil
}

// requeueNamespaceNotAllowed: a group refused for the namespaces it protects looks again, in
// case an administrator labelled its namespace an admin namespace.
const requeueNamespaceNotAllowed = 10 * time.Second

// foreignNamespaces says why the group may not protect the namespaces it names (empty when it
// may): a group protects namespaces other than its own only from an admin namespace of this
// cluster (tenancy.Rules.IsAdmin: drover-system or the agent's --admin-namespaces, or a
// namespace labelled tenancy.LabelAdminNamespace=true here). The hub makes groups from
// DRPlacementControls it validated by the same rule, but whoever may create groups in a
// namespace of this cluster (the hub's credential, or anyone granted the kind) is not trusted
// to have done so: the agent would capture the other namespace's Secrets and, on a failover,
// delete its workloads.
func (r *Reconciler) foreignNamespaces(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup) (string, error) {
	foreign := foreignNamespaces(vrg)
	if len(foreign) == 0 {
		return "", nil
	}
	if admin, err := r.adminNamespace(ctx, vrg.Namespace); err != nil || admin {
		return "", err
	}
	return tenancy.ForeignNamespaceMessage(vrg.Namespace, foreign), nil
}

// foreignNamespaces are the namespaces a group protects besides its own.
func foreignNamespaces(vrg *v1alpha1.VolumeReplicationGroup) []string {
	var foreign []string
	for _, ns := range protectedNamespaces(vrg) {
		if ns != vrg.Namespace {
			foreign = append(foreign, ns)
		}
	}
	return foreign
}

// namespaceLabelsProblem is foreignMessage with the labels of the group's namespace read by
// reader.
func namespaceLabelsProblem(ctx context.Context, reader client.Reader, vrg *v1alpha1.VolumeReplicationGroup, foreign []string) (string, error) {
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: vrg.Namespace}, ns); err != nil {
		return "", fmt.Errorf("failed to get namespace %s to check that its groups may protect others: %w", vrg.Namespace, err)
	}
	return foreignMessage(vrg, foreign, ns.Labels), nil
}

// foreignMessage says why a group may not protect the foreign namespaces, its own namespace
// carrying labels; empty when that namespace is labelled an admin namespace.
func foreignMessage(vrg *v1alpha1.VolumeReplicationGroup, foreign []string, labels map[string]string) string {
	if labels[tenancy.LabelAdminNamespace] == "true" {
		return ""
	}
	return tenancy.ForeignNamespaceMessage(vrg.Namespace, foreign)
}

// NamespaceProblem says why a group may not protect the namespaces it names on this cluster,
// empty when it may: a system namespace, or a namespace other than its own when its own is not
// an admin namespace of this cluster (rules, or the label tenancy.LabelAdminNamespace read by
// reader). Its reconciler refuses such a group (parseSpec), and a drill refuses to copy one:
// whoever may create groups and DrillSandboxes in a namespace (the hub's credential) would
// otherwise copy another application's data into a sandbox of theirs.
func NamespaceProblem(ctx context.Context, reader client.Reader, rules tenancy.Rules, vrg *v1alpha1.VolumeReplicationGroup) (string, error) {
	if ns := rules.FirstSystem(protectedNamespaces(vrg)); ns != "" {
		return tenancy.SystemNamespaceMessage(ns), nil
	}
	foreign := foreignNamespaces(vrg)
	if len(foreign) == 0 || rules.IsAdmin(vrg.Namespace) {
		return "", nil
	}
	return namespaceLabelsProblem(ctx, reader, vrg, foreign)
}

// privilegedMoversProblem says why the group may not ask for privileged VolSync movers (empty
// when it may): only a group of an admin namespace of this cluster may. Such movers run as root
// in the protected namespaces, which the agent annotates volsync.backube/privileged-movers; the
// hub names such a DRPolicy only from its admin namespaces, but whoever may create groups here
// (the hub's credential among them) is not trusted to have asked it.
func (r *Reconciler) privilegedMoversProblem(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup) (string, error) {
	if !privilegedMovers(vrg) {
		return "", nil
	}
	if admin, err := r.adminNamespace(ctx, vrg.Namespace); err != nil || admin {
		return "", err
	}
	return fmt.Sprintf("the group asks for privileged VolSync movers (spec.volSync.movers Privileged), which run as root in the protected namespaces, "+
		"but its namespace %s is not an admin namespace of this cluster: only a group of %s, of one of the agent's --admin-namespaces, or of a namespace "+
		"an administrator of this cluster labelled %s=true may; protect the application with a DRPolicy whose movers are unprivileged",
		vrg.Namespace, tenancy.DefaultAdminNamespace, tenancy.LabelAdminNamespace), nil
}

// adminNamespace says whether groups of namespace ns may do what only an admin namespace of
// this cluster may: tenancy.Rules.IsAdmin (drover-system or the agent's --admin-namespaces),
// or a namespace labelled tenancy.LabelAdminNamespace=true here.
func (r *Reconciler) adminNamespace(ctx context.Context, ns string) (bool, error) {
	if r.Tenancy.IsAdmin(ns) {
		return true, nil
	}
	labels := map[string]string(nil)
	if meta, ok := r.cachedMetadata(ctx, namespaceGVK, client.ObjectKey{Name: ns}); ok {
		labels = meta.Labels
	} else {
		obj := &corev1.Namespace{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
			return false, fmt.Errorf("failed to get namespace %s to check whether it is an admin namespace: %w", ns, err)
		}
		labels = obj.Labels
	}
	return labels[tenancy.LabelAdminNamespace] == "true", nil
}

// selectPVCs lists the PVCs that spec.pvcSelector selects in the protected namespaces, and
// releases the protected ones being deleted.
func (r *Reconciler) selectPVCs(ctx context.Context, sc *scope) (ctrl.Result, error) {
	sel, _ := pvcSelector(sc.vrg) // parseSpec checked it
	var errs []error
	result := ctrl.Result{}
	for _, ns := range protectedNamespaces(sc.vrg) {
		list := &corev1.PersistentVolumeClaimList{}
		if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			sc.stop = true
			return ctrl.Result{}, fmt.Errorf("failed to list PVCs in namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			pvc := &list.Items[i]
			if why, skip := notTheApplications(pvc); skip {
				ctrl.LoggerFrom(ctx).V(1).Info("Left a selected PVC out of the group", "pvc", klog.KObj(pvc), "reason", why)
				continue
			}
			released, err := r.releaseDeleted(ctx, sc, pvc)
			if err != nil {
				errs = append(errs, err)
			}
			if !released {
				sc.pvcs = append(sc.pvcs, &pvcState{pvc: pvc})
				continue
			}
			if controllerutil.ContainsFinalizer(pvc, PVCFinalizer) {
				result = shortest(result, ctrl.Result{RequeueAfter: requeueWaitingForStorage})
			}
		}
	}
	slices.SortFunc(sc.pvcs, func(a, b *pvcState) int { return strings.Compare(a.key(), b.key()) })
	sc.pvcsListed = true
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// labelCreatedBy and createdByVolSync mark what VolSync creates itself (its movers' Jobs and
// pods, their temporary PVCs and snapshots): VolSync labels them so (SetOwnedByVolSync in
// VolSync's internal/controller/utils/utils.go).
const (
	labelCreatedBy   = "app.kubernetes.io/created-by"
	createdByVolSync = "volsync"
)

// notTheApplications reports why a PVC that spec.pvcSelector matches is still not one of the
// application's: drover's own DR-owned PVC of a relocation's final sync (volsync_finalsync.go
// drives it), or a PVC VolSync made for its mover. A broad selector (an empty one selects every
// PVC of the namespace) would otherwise protect them as the application's, and replicate,
// restore and fence them.
func notTheApplications(pvc *corev1.PersistentVolumeClaim) (string, bool) {
	if of, ok := pvc.Annotations[volsync.AnnotationFinalSyncOf]; ok {
		return "the DR-owned PVC of the final sync of PVC " + of, true
	}
	if pvc.Labels[labelCreatedBy] == createdByVolSync {
		return "a PVC VolSync made for its mover", true
	}
	return "", false
}

// releaseDeleted unprotects a PVC that its owner deleted, so the deletion completes: the
// application no longer wants it. It reports whether the PVC is left out of the group (being
// released). During a relocation (spec.finalSyncRequest set) a deleted PVC stays protected, since
// its final sync must still carry every write; the final sync path releases it.
func (r *Reconciler) releaseDeleted(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if pvc.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if sc.vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary && ownedBy(pvc.Labels, sc.vrg) {
		// Deleted while this group was secondary, its replica is kept: the promotion restores
		// the PVC onto it once this one is gone (keepReplica, as primary).
		kept, err := r.keptReplica(ctx, sc, pvc)
		if err != nil || kept {
			if err == nil {
				_, err = r.keepReplica(ctx, sc, pvc, true)
			}
			return true, err
		}
	}
	if sc.vrg.Spec.FinalSyncRequest != "" {
		return false, nil
	}
	if !ownedBy(pvc.Labels, sc.vrg) {
		// Not ours (never marked, or another group's): nothing to release, nothing to protect.
		return true, nil
	}
	if sc.vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary {
		// A VolRep PVC deleted on a secondary stays in the group until it is demoted; demotePVC
		// then releases it and keeps its replica (keepReplica).
		backend, err := r.backendOf(ctx, sc, pvc)
		if err != nil || backend == v1alpha1.BackendVolRep {
			return false, err
		}
	}
	res, err := r.unprotectPVC(ctx, sc, pvc)
	if err == nil && res.IsDone() {
		ctrl.LoggerFrom(ctx).Info("Released deleted PVC", "pvc", klog.KObj(pvc))
		controllerutil.RemoveFinalizer(pvc, PVCFinalizer)
	}
	return true, err
}

// protectPVCs protects every selected PVC and asks for the soonest look again any of them needs.
func (r *Reconciler) protectPVCs(ctx context.Context, sc *scope) (ctrl.Result, error) {
	// A member whose label could not be written is still protected: its group waits for it.
	groupErr := r.assignGroups(ctx, sc)
	if err := forEachPVC(sc, func(ps *pvcState) error { return r.protectPVC(ctx, sc, ps) }); err != nil || groupErr != nil {
		return ctrl.Result{}, errors.Join(groupErr, err)
	}
	return ctrl.Result{RequeueAfter: pvcsRequeue(sc.pvcs, true)}, nil
}

// lookAgain asks the storage once more, reading only, about each PVC that Protect left waiting
// earlier in this pass (a VolumeReplication just created or promoted): the storage often acts
// while the pass restores the objects and captures them, and its answer then reaches this
// pass's status. Without this second look a failed-over group reported DataReady only in its
// next pass, 9 s later (p50) in the agent's queue at 100 applications (81b74ec, 2026-12-02;
// docs/benchmarks.md, "The measurements today's defaults rest on"). A backend that cannot tell
// without writing is left to that next pass, which the storage's own change wakes.
func (r *Reconciler) lookAgain(ctx context.Context, sc *scope) (ctrl.Result, error) {
	var errs []error
	for _, ps := range sc.pvcs {
		if ps.protected == nil || ps.result.Outcome != replication.OutcomeRetry {
			continue
		}
		backend, ok := r.Backends.Backend(ps.backend)
		observer, observes := backend.(replication.ProtectionObserver)
		if !ok || !observes {
			continue
		}
		if res, known := observer.ObserveProtection(ctx, ps.protected); !known || !res.IsDone() {
			continue
		}
		sync, err := backend.Status(ctx, ps.protected)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps.result, ps.sync = replication.Done(), sync
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// forEachPVC runs do for every selected PVC. An API failure becomes the PVC's result (retried
// soon) and is returned, joined with the others; the other PVCs go on.
func forEachPVC(sc *scope, do func(*pvcState) error) error {
	var errs []error
	for _, ps := range sc.pvcs {
		if err := do(ps); err != nil {
			errs = append(errs, err)
			ps.result = replication.Retry(requeueWaitingForStorage, v1alpha1.ReasonError, err.Error())
		}
	}
	return errors.Join(errs...)
}

// pvcsRequeue is how soon the PVCs need another look: the soonest retry a backend asked for, a
// slow one while a PVC waits for a person, with awaitFirstSync a short poll while a PVC's first
// sync is awaited (protection), and the safety requeue otherwise.
func pvcsRequeue(pvcs []*pvcState, awaitFirstSync bool) time.Duration {
	after := requeueSafety
	for _, ps := range pvcs {
		switch {
		case ps.result.Outcome == replication.OutcomeRetry:
			after = min(after, max(ps.result.RetryAfter, requeueWaitingForStorage))
		case ps.result.Outcome == replication.OutcomeFailed:
			after = min(after, requeueAfterFailure)
		case awaitFirstSync && ps.sync.LastSyncTime == nil:
			after = min(after, requeueWaitingForFirstSync)
		case ps.release != "":
			after = min(after, requeueWaitingForStorage)
		}
	}
	return after
}

// protectPVC marks one PVC protected, retains its PV and runs its backend's Protect. Problems
// the user must fix land in ps.result; API failures are returned.
func (r *Reconciler) protectPVC(ctx context.Context, sc *scope, ps *pvcState) error {
	pvc := ps.pvc
	if pvc.Spec.StorageClassName != nil {
		ps.storageClass = *pvc.Spec.StorageClassName
	}
	if c, ok := sc.restore.conflict(ps.key()); ok {
		// Never protect (mark, replicate, store) a PVC that collides with the restore: it is
		// not the application's replicated volume, and storing it would overwrite the metadata
		// the restore needs.
		ps.result = replication.Failed(c.reason, c.message)
		return nil
	}
	if owner := pvc.Labels[LabelProtectedBy]; owner != "" && !ownedBy(pvc.Labels, sc.vrg) {
		if ns := pvc.Labels[LabelProtectedByNamespace]; ns != "" {
			owner = ns + "/" + owner
		}
		ps.result = replication.Failed(v1alpha1.ReasonPVCSelectedByOtherGroup, fmt.Sprintf(
			"PVC %s is already protected by VolumeReplicationGroup %s (label %s): narrow the pvcSelector of one of the groups",
			ps.key(), owner, LabelProtectedBy))
		return nil
	}
	if refusedForGroup(ps) {
		return nil
	}
	if err := r.markProtected(ctx, sc, pvc); err != nil {
		return retryOnConflict(ps, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		var err error
		ps.result, err = r.unboundResult(ctx, ps)
		return err
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return fmt.Errorf("failed to get PV %s of PVC %s: %w", pvc.Spec.VolumeName, ps.key(), err)
	}
	if err := r.retainPV(ctx, sc, pv); err != nil {
		return retryOnConflict(ps, err)
	}
	ps.pv = pv

	provisioner, err := r.provisioner(ctx, ps.storageClass, pv)
	if err != nil {
		return err
	}
	backend, err := r.Backends.Select(sc.vrg.Spec.StorageClassBackends, ps.storageClass, provisioner)
	if err != nil {
		ps.result = replication.Failed(selectionReason(err), fmt.Sprintf("PVC %s: %v", ps.key(), err))
		return nil
	}
	ps.backend = backend.Name()
	if refusedForGroup(ps) {
		return nil
	}
	pc := &replication.PVCContext{
		VRG: sc.vrg, PVC: pvc, PV: pv, StorageClassName: ps.storageClass, Provisioner: provisioner, Interval: sc.interval, Group: ps.group,
	}
	if ps.backend == v1alpha1.BackendVolSync {
		if pc.MoverSecurityContext, pc.MoverUserUnknown, err = r.moverUser(ctx, sc.vrg, pvc); err != nil {
			return err
		}
		ps.moverUser = pc.MoverSecurityContext
		pc.SyncTrigger = passedCycle(sc.vrg)
	}
	ps.result, ps.protected = backend.Protect(ctx, pc), pc
	if ps.backend == v1alpha1.BackendVolSync {
		ps.result = volSyncKeyResult(sc, ps.key(), ps.result)
	}
	// The metadata of a PVC whose replication cannot work is not stored: restoring it on the
	// peer would give the workload a volume without its data.
	ps.writeMetadata = ps.result.Outcome != replication.OutcomeFailed
	if ps.sync, err = backend.Status(ctx, pc); err != nil {
		return err
	}
	if err := r.recordGroupHandle(ctx, ps); err != nil {
		return retryOnConflict(ps, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Protected PVC", "pvc", klog.KObj(pvc), "backend", ps.backend, "result", ps.result.String())
	return nil
}

// retryOnConflict turns a write that lost an optimistic-lock race (the cache was behind the
// API server, or another writer won) into a short retry of the PVC; other errors are returned.
func retryOnConflict(ps *pvcState, err error) error {
	if !apierrors.IsConflict(err) {
		return err
	}
	ps.result = replication.Retry(requeueWaitingForStorage, v1alpha1.ReasonProgressing,
		fmt.Sprintf("PVC %s or its PV changed while drover marked it; retrying", ps.key()))
	return nil
}

// selectionReason is the condition reason of a backend selection error.
func selectionReason(err error) string {
	switch {
	case errors.Is(err, replication.ErrSeveralBackends):
		return v1alpha1.ReasonInvalidSpec
	case errors.Is(err, replication.ErrBackendNotAvailable):
		return v1alpha1.ReasonBackendNotAvailable
	default:
		return v1alpha1.ReasonNoBackend
	}
}

// markProtected adds the protection finalizer and label to a PVC. A PVC being deleted gets no
// new finalizer (the API server refuses one), and keeps the one it has.
func (r *Reconciler) markProtected(ctx context.Context, sc *scope, pvc *corev1.PersistentVolumeClaim) error {
	labelled := pvc.Labels[LabelProtectedBy] == sc.vrg.Name && pvc.Labels[LabelProtectedByNamespace] == sc.vrg.Namespace
	if labelled && (controllerutil.ContainsFinalizer(pvc, PVCFinalizer) || !pvc.DeletionTimestamp.IsZero()) {
		return nil
	}
	before := pvc.DeepCopy()
	if pvc.DeletionTimestamp.IsZero() {
		controllerutil.AddFinalizer(pvc, PVCFinalizer)
	}
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	pvc.Labels[LabelProtectedBy] = sc.vrg.Name
	pvc.Labels[LabelProtectedByNamespace] = sc.vrg.Namespace
	// The optimistic lock makes two groups racing for one PVC fail instead of both winning.
	if err := r.Client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to mark PVC %s protected: %w", klog.KObj(pvc), err)
	}
	return nil
}

// ownedBy reports whether a PVC's labels name vrg as its group: its name, and its namespace
// when the PVC carries one (a PVC labelled before LabelProtectedByNamespace existed does not).
func ownedBy(l map[string]string, vrg *v1alpha1.VolumeReplicationGroup) bool {
	ns, ok := l[LabelProtectedByNamespace]
	return l[LabelProtectedBy] == vrg.Name && (!ok || ns == vrg.Namespace)
}

// retainPV sets the PV's reclaim policy to Retain, first recording the original in an
// annotation. The annotation is written once: a later reconcile that finds Retain must not record
// Retain as the original.
func (r *Reconciler) retainPV(ctx context.Context, sc *scope, pv *corev1.PersistentVolume) error {
	_, recorded := pv.Annotations[AnnotationOriginalReclaimPolicy]
	labelled := pv.Labels[LabelProtectedBy] == sc.vrg.Name && pv.Labels[LabelProtectedByNamespace] == sc.vrg.Namespace
	if recorded && labelled && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
		return nil
	}
	before := pv.DeepCopy()
	if !recorded {
		metav1.SetMetaDataAnnotation(&pv.ObjectMeta, AnnotationOriginalReclaimPolicy, string(pv.Spec.PersistentVolumeReclaimPolicy))
	}
	// The labels find the PV again if its PVC is deleted on a secondary (keepReplica).
	metav1.SetMetaDataLabel(&pv.ObjectMeta, LabelProtectedBy, sc.vrg.Name)
	metav1.SetMetaDataLabel(&pv.ObjectMeta, LabelProtectedByNamespace, sc.vrg.Namespace)
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	if err := r.Client.Patch(ctx, pv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to set reclaim policy Retain on PV %s: %w", pv.Name, err)
	}
	return nil
}

// provisioner returns the provisioner of the StorageClass, or the PV's CSI driver when the class
// does not exist (it may be deleted after provisioning).
func (r *Reconciler) provisioner(ctx context.Context, className string, pv *corev1.PersistentVolume) (string, error) {
	if className != "" {
		class := &storagev1.StorageClass{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: className}, class)
		switch {
		case err == nil:
			return class.Provisioner, nil
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("failed to get StorageClass %s: %w", className, err)
		}
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, nil
	}
	return "", nil
}

// pvcSelector returns spec.pvcSelector as a selector.
func pvcSelector(vrg *v1alpha1.VolumeReplicationGroup) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(&vrg.Spec.PVCSelector)
}

// protectedNamespaces returns spec.protectedNamespaces, or the group's own namespace.
func protectedNamespaces(vrg *v1alpha1.VolumeReplicationGroup) []string {
	return ProtectedNamespaces(vrg)
}

// ProtectedNamespaces are the namespaces a group protects: spec.protectedNamespaces, or its own.
func ProtectedNamespaces(vrg *v1alpha1.VolumeReplicationGroup) []string {
	if len(vrg.Spec.ProtectedNamespaces) == 0 {
		return []string{vrg.Namespace}
	}
	return vrg.Spec.ProtectedNamespaces
}
