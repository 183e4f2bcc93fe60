package vrg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
)

// AnnotationDemotedAt records on a group, in RFC 3339, when the agent first asked the storage to
// demote a PVC for a relocation. The final sync is proven by a last sync at or after it; it
// cannot be re-observed, so it is persisted, and removed once the final sync is recorded.
const AnnotationDemotedAt = "drover.io/relocate-demoted-at"

// requeueWaitingForFence: the API server has not started to enforce the fence yet (its informers
// see the namespace label and the group's annotation within a second or so).
const requeueWaitingForFence = 500 * time.Millisecond

// The fence's steps need to label namespaces and to create dry-run pods (ProbeFence).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=create

// fenceRelocation fences the PVCs of a group that is secondary for a relocation (DESIGN.md, PVC
// rule 3), before demotePVCs checks their consumers: it labels every protected namespace so the
// API server calls the fence, annotates the group (AnnotationFence, while it is still demoting)
// and probes until the API server refuses a pod that mounts a protected PVC. Only then is
// sc.fenced true and may a PVC be demoted. The probe waits while the cache shows every PVC left
// to demote in use (no demotion can follow in that pass). A PVC already demoted
// (prepareDemotions) needs no fence: once none is left to demote, a pass neither annotates nor
// probes, and trusts the watch of namespaces' metadata for their label. Without the fence
// (Reconciler.Fence false) it does nothing and demotePVC refuses to demote.
func (r *Reconciler) fenceRelocation(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.vrg.Spec.Action != v1alpha1.ActionRelocate || !r.Fence {
		return ctrl.Result{}, nil
	}
	// A secondary group keeps its namespaces fenced; with nothing left to demote (settled) the
	// watch is trusted to show the label.
	probe := fenceProbe(sc)
	labelled, err := r.setNamespaceFences(ctx, sc, true, probe == nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(labelled) > 0 {
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventFenced,
			"Fenced namespaces %s for the relocation: the API server refuses new pods that mount a protected PVC there", strings.Join(labelled, ", "))
	}
	if probe == nil {
		// Nothing protected here is left to demote: nothing to fence.
		sc.fenced = true
		return ctrl.Result{}, nil
	}
	if sc.vrg.Status.State != v1alpha1.StateSecondary && sc.vrg.Annotations[webhook.AnnotationFence] != webhook.FenceRelocate {
		if err := r.annotate(ctx, sc, webhook.AnnotationFence, webhook.FenceRelocate); err != nil {
			return ctrl.Result{}, err
		}
	}
	if inUse, err := r.allInUseInCache(ctx, sc); err != nil || inUse {
		// The workload still runs here: no PVC is demoted this pass, and the pass that finds
		// one free (woken by the end of its last consumer) probes.
		return ctrl.Result{}, err
	}
	fenced, err := webhook.ProbeFence(ctx, r.Client, probe.pvc.Namespace, probe.pvc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !fenced {
		return ctrl.Result{RequeueAfter: requeueWaitingForFence}, nil
	}
	sc.fenced = true
	return ctrl.Result{}, nil
}

// fenceProbe is the PVC the fence is probed with: the first left to demote; nil when none is.
func fenceProbe(sc *scope) *pvcState {
	for _, ps := range sc.pvcs {
		if leftToDemote(sc, ps) {
			return ps
		}
	}
	return nil
}

// leftToDemote reports whether a PVC the group protects here is bound and not demoted yet.
func leftToDemote(sc *scope, ps *pvcState) bool {
	return ownedBy(ps.pvc.Labels, sc.vrg) && ps.pvc.Spec.VolumeName != "" && (ps.demotion == nil || !ps.demotion.done)
}

// allInUseInCache reports whether the cache shows every PVC left to demote in use.
func (r *Reconciler) allInUseInCache(ctx context.Context, sc *scope) (bool, error) {
	for _, ps := range sc.pvcs {
		if !leftToDemote(sc, ps) {
			continue
		}
		users, err := r.listConsumers(ctx, ps.pvc, false)
		if err != nil || len(users) == 0 {
			return false, err
		}
	}
	return true, nil
}

// setNamespaceFences sets (fenced) or lifts the fence label of every protected namespace and
// returns those it changed. With trustCache a namespace the metadata watch already shows so, at
// the newest version the agent saw (namespaceFenceInCache), is not read from the API server.
func (r *Reconciler) setNamespaceFences(ctx context.Context, sc *scope, fenced, trustCache bool) ([]string, error) {
	var changedNS []string
	for _, ns := range protectedNamespaces(sc.vrg) {
		if trustCache && r.namespaceFenceInCache(ctx, ns, fenced) {
			continue
		}
		nsObj, changed, err := webhook.SetNamespaceFence(ctx, r.Client, ns, fenced)
		if err != nil {
			return nil, err
		}
		r.namespaces.Seen(nsObj)
		if changed {
			changedNS = append(changedNS, ns)
		}
	}
	return changedNS, nil
}

// finishRelocation records the final sync and removes what fenced the demotion, once every PVC
// is secondary. status.finalSync is set when every demoted PVC's storage reports it in sync with
// its peer for the demotion (SyncStatus.DemotedInSync: csi-addons reports no last sync for a
// secondary) or its last sync began at or after AnnotationDemotedAt (a backend that syncs on
// demand, or a storage that reports a secondary's syncs: metav1.Time has a resolution of a
// second, so the demotion time is truncated to the second); without spec.finalSyncRequest the PVCs are
// demoted and finalSync stays unset. The fence annotation goes once all are secondary (the
// group's secondary state fences its PVCs from then on); AnnotationDemotedAt goes once the
// final sync is recorded in the status (a pass after the one that records it, hence the short
// requeue).
func (r *Reconciler) finishRelocation(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.vrg.Spec.Action != v1alpha1.ActionRelocate || !r.Fence {
		return ctrl.Result{}, nil
	}
	for _, ps := range sc.pvcs {
		if !ps.result.IsDone() {
			return ctrl.Result{}, nil
		}
	}
	if len(sc.finalSyncPending) > 0 {
		return ctrl.Result{RequeueAfter: requeueFinalSync}, nil
	}
	if sc.vrg.Annotations[webhook.AnnotationFence] != "" {
		if err := r.annotate(ctx, sc, webhook.AnnotationFence, ""); err != nil {
			return ctrl.Result{}, err
		}
	}
	request := sc.vrg.Spec.FinalSyncRequest
	recorded := sc.vrg.Status.FinalSync != nil && sc.vrg.Status.FinalSync.Request == request
	if request == "" || recorded {
		if sc.vrg.Annotations[AnnotationDemotedAt] != "" {
			return ctrl.Result{}, r.annotate(ctx, sc, AnnotationDemotedAt, "")
		}
		return ctrl.Result{}, nil
	}
	if !slices.ContainsFunc(sc.pvcs, func(ps *pvcState) bool { return ps.pv != nil }) {
		// No volume to sync (a group protected by its captured objects alone): nothing was
		// demoted, so nothing marked the demotion, and nothing is left to wait for.
		sc.finalSync = &v1alpha1.FinalSyncStatus{Request: request, CompletionTime: metav1.Now()}
		ctrl.LoggerFrom(ctx).Info("Final sync completed: the group has no volume", "request", request)
		return ctrl.Result{RequeueAfter: requeueWaitingForFence}, nil
	}
	demotedAt, err := time.Parse(time.RFC3339Nano, sc.vrg.Annotations[AnnotationDemotedAt])
	if err != nil {
		// Demoted before this agent recorded when, or the annotation was edited: the final
		// sync cannot be proven, and no requeue would change that.
		ctrl.LoggerFrom(ctx).Error(err, "Cannot prove the final sync", "annotation", AnnotationDemotedAt)
		return ctrl.Result{}, nil
	}
	demotedAt = demotedAt.Truncate(time.Second)
	for _, ps := range sc.pvcs {
		if ps.pv == nil {
			continue
		}
		if !ps.sync.DemotedInSync && (ps.sync.LastSyncTime == nil || ps.sync.LastSyncTime.Time.Before(demotedAt)) {
			return ctrl.Result{RequeueAfter: requeueWaitingForStorage}, nil
		}
	}
	sc.finalSync = &v1alpha1.FinalSyncStatus{Request: request, CompletionTime: metav1.Now()}
	ctrl.LoggerFrom(ctx).Info("Final sync completed", "request", request)
	return ctrl.Result{RequeueAfter: requeueWaitingForFence}, nil
}

// markDemotion records AnnotationDemotedAt before the first demotion of a relocation whose final
// sync is not recorded yet. Once it is (or none is asked), finishRelocation removes the
// annotation, and marking again would undo that at every pass: each change of the annotation
// woke the group for another pass, which set or removed it again, five times a second for every
// relocated group, for as long as it stayed secondary.
func (r *Reconciler) markDemotion(ctx context.Context, sc *scope) error {
	if sc.vrg.Annotations[AnnotationDemotedAt] != "" || !finalSyncOpen(sc.vrg) {
		return nil
	}
	return r.annotate(ctx, sc, AnnotationDemotedAt, time.Now().UTC().Format(time.RFC3339Nano))
}

// unfence undoes the fence of a group that is primary again: its annotations and the label of
// its namespaces. Namespaces are read uncached (the agent does not watch them).
func (r *Reconciler) unfence(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !r.Fence {
		return ctrl.Result{}, nil
	}
	for _, a := range []string{webhook.AnnotationFence, AnnotationDemotedAt} {
		if sc.vrg.Annotations[a] != "" {
			if err := r.annotate(ctx, sc, a, ""); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	unfenced, err := r.setNamespaceFences(ctx, sc, false, true)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(unfenced) > 0 {
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventUnfenced, "Lifted the fence of namespaces %s: the group is primary", strings.Join(unfenced, ", "))
	}
	return ctrl.Result{}, nil
}

// annotate sets (value non-empty) or removes one annotation of the group by a merge patch.
// The patch is sent from a copy: its answer is the group as the API server holds it now, whose
// spec may already be the hub's next step (a relocation's old primary promoted back, say), and
// the rest of the pass must act on the spec it began with, never on half of each. (A secondary
// pass that took the answer found a primary's spec without spec.volSync.receivePVCs and deleted
// every ReplicationDestination its promotion was about to adopt the kept PVCs from.) The next
// spec gets a pass of its own: the change is an event.
func (r *Reconciler) annotate(ctx context.Context, sc *scope, key, value string) error {
	before := sc.vrg.DeepCopy()
	if value == "" {
		delete(sc.vrg.Annotations, key)
	} else {
		if sc.vrg.Annotations == nil {
			sc.vrg.Annotations = map[string]string{}
		}
		sc.vrg.Annotations[key] = value
	}
	answer := sc.vrg.DeepCopy()
	if err := r.Client.Patch(ctx, answer, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch annotation %s of VolumeReplicationGroup %s: %w", key, klog.KObj(sc.vrg), err)
	}
	r.versions.Seen(answer)
	return nil
}

// namespaceFenceInCache reports whether the watch of namespaces' metadata shows namespace ns
// fenced as asked, at the newest version the agent has seen of it (its own last fence or
// unfence): then a pass need not read it from the API server, as every primary's pass did (at
// 100 groups during a failover, tens of reads a second), and every settled relocated
// secondary's. A cache that cannot say, or that may not show the agent's own last change yet,
// means "read it". While a PVC is left to demote, setting the fence always reads.
func (r *Reconciler) namespaceFenceInCache(ctx context.Context, ns string, fenced bool) bool {
	meta, ok := r.cachedMetadata(ctx, namespaceGVK, client.ObjectKey{Name: ns})
	return ok && webhook.IsFenced(meta.Labels) == fenced && r.namespaces.Shows(meta)
}
