package vrg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// VolSync (internal/replication/volsync; DESIGN.md, "Replication backends"). The backend's
// per-PVC methods run through the same paths as volrep's (protect, demote, cleanup); what VolSync
// needs beyond them lives in the volsync*.go files of this package:
//   - a secondary receives: one ReplicationDestination per spec.volSync.receivePVCs entry, and
//     status.volSyncDestinations says where each listens (receiveVolSync, below);
//   - a promotion restores a VolSync PVC from its destination's latest snapshot, held
//     do-not-delete until the PVC is Bound, replacing a kept PVC that the destination
//     received into (volsync_promote.go, volsync_image.go);
//   - a relocation's final sync runs a manual sync per PVC, from a DR-owned PVC bound to the
//     retained PV when the workload deleted its PVC (volsync_finalsync.go);
//   - unprotecting removes every VolSync object of the group (volsync_delete.go).

// VolSync's objects: the agent creates, changes and deletes ReplicationSources and
// ReplicationDestinations, reads VolumeSnapshotClasses (to choose one), labels the
// VolumeSnapshot a restore reads do-not-delete and deletes it once released
// (volsync_image.go), creates and deletes key Secrets (read uncached, one by one), and deletes
// the DR-owned PVCs of final syncs and the replica PVCs a promotion replaces. With
// spec.volSync.address ServiceExport it creates, reads (uncached: a cluster without the MCS
// API needs no watch) and deletes the ServiceExports of its destinations' Services.
// +kubebuilder:rbac:groups=volsync.backube,resources=replicationsources;replicationdestinations,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceexports,verbs=get;create;delete

// volSync returns the agent's VolSync backend, or nil when it has none.
func (r *Reconciler) volSync() *volsync.Backend {
	b, ok := r.Backends.Backend(v1alpha1.BackendVolSync)
	if !ok {
		return nil
	}
	vs, _ := b.(*volsync.Backend)
	return vs
}

// receivePVCs returns spec.volSync.receivePVCs.
func receivePVCs(vrg *v1alpha1.VolumeReplicationGroup) []v1alpha1.VolSyncReceivePVC {
	if vrg.Spec.VolSync == nil {
		return nil
	}
	return vrg.Spec.VolSync.ReceivePVCs
}

// finalSyncOpen reports whether the group is the old primary of a relocation whose final sync
// is asked and not recorded yet: its ReplicationSources still carry that sync.
func finalSyncOpen(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.Action == v1alpha1.ActionRelocate && vrg.Spec.FinalSyncRequest != "" && !vrg.FinalSyncComplete()
}

// receiveVolSync makes a secondary the destination side: a ReplicationDestination per
// spec.volSync.receivePVCs entry, reported in status.volSyncDestinations once VolSync publishes
// its address, and none of the group's ReplicationSources (a failover's old primary stops
// sending at once; a relocation's old primary once its final sync is recorded). A PVC that this
// cluster kept from its time as primary, is selected, matches the entry and is no longer used
// (its demotion is done) becomes the destination's own volume (marked
// volsync.AnnotationReceivedBy), so it holds VolSync's replica from then on and a later
// promotion replaces it by a restore of the latest image; otherwise VolSync makes its own
// volume. A destination whose address the peer cannot use (volsync.AddressMode) makes
// DataProtected False with reason VolSyncAddressUnreachable, saying which setting to choose.
func (r *Reconciler) receiveVolSync(ctx context.Context, sc *scope) (ctrl.Result, error) {
	vs := r.volSync()
	receive := receivePVCs(sc.vrg)
	if vs == nil {
		if len(receive) > 0 {
			ctrl.LoggerFrom(ctx).Info("spec.volSync.receivePVCs is set but this agent has no VolSync backend")
		}
		return ctrl.Result{}, nil
	}
	if finalSyncOpen(sc.vrg) {
		// The PVCs are still the sources of the final sync; finishRelocation records it.
		return ctrl.Result{}, nil
	}
	result := ctrl.Result{}
	wanted := map[string]bool{}
	var dests []v1alpha1.VolSyncDestination
	var problems []string
	for _, rp := range receive {
		key := rp.PVCNamespace + "/" + rp.PVCName
		wanted[key] = true
		into, wait := receiveInto(sc, rp)
		if wait {
			result = shortest(result, ctrl.Result{RequeueAfter: requeueWaitingForConsumers})
			continue
		}
		d, res := vs.EnsureDestination(ctx, sc.vrg, rp, into)
		if d != nil {
			dests = append(dests, *d)
		}
		if !res.IsDone() {
			problems = append(problems, res.String())
			result = shortest(result, ctrl.Result{RequeueAfter: resultRequeue(res)})
		}
		if (res.Reason == v1alpha1.ReasonVolSyncAddressUnreachable || res.Reason == v1alpha1.ReasonVolSyncMoverUserUnknown) && sc.volSyncUnreachable == nil {
			sc.volSyncUnreachable = &metav1.Condition{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse,
				Reason: res.Reason, Message: fmt.Sprintf("PVC %s cannot be received: %s", key, res.Message)}
		}
	}
	var errs []error
	for _, ns := range volSyncNamespaces(sc.vrg) {
		gone, err := vs.DeleteGroupObjects(ctx, sc.vrg, ns, volsync.GroupDeletion{Keep: func(kind, name string) bool {
			return kind == "ReplicationDestination" && wanted[ns+"/"+name]
		}})
		if err != nil {
			errs = append(errs, err)
		} else if !gone {
			result = shortest(result, ctrl.Result{RequeueAfter: requeueWaitingForStorage})
		}
	}
	slices.SortFunc(dests, func(a, b v1alpha1.VolSyncDestination) int {
		return strings.Compare(a.PVCNamespace+"/"+a.PVCName, b.PVCNamespace+"/"+b.PVCName)
	})
	sc.vrg.Status.VolSyncDestinations = dests
	received, err := receivedSyncTime(ctx, vs, sc.vrg, receive)
	sc.vrg.Status.ReceivedSyncTime, errs = received, append(errs, err)
	if len(problems) > 0 {
		ctrl.LoggerFrom(ctx).Info("Waiting for VolSync destinations", "problems", strings.Join(problems, "; "))
	}
	return result, errors.Join(errs...)
}

// resultRequeue is how soon a Result not done asks to be looked at again.
func resultRequeue(res replication.Result) time.Duration {
	if res.Outcome == replication.OutcomeFailed {
		return requeueAfterFailure
	}
	return max(res.RetryAfter, requeueWaitingForStorage)
}

// receiveInto says which existing PVC a destination receives into ("" lets VolSync make its
// own), or that the PVC must first stop being used (wait).
func receiveInto(sc *scope, rp v1alpha1.VolSyncReceivePVC) (into string, wait bool) {
	for _, ps := range sc.pvcs {
		if ps.pvc.Namespace != rp.PVCNamespace || ps.pvc.Name != rp.PVCName {
			continue
		}
		switch {
		case !ps.pvc.DeletionTimestamp.IsZero() || ps.backend != v1alpha1.BackendVolSync:
			return "", false
		case !ps.result.IsDone():
			// In use, or its source is still being removed: receiving into it now would write
			// under a running workload.
			return "", true
		case receiveMismatch(ps.pvc, rp) != "":
			return "", false
		}
		return ps.pvc.Name, false
	}
	return "", false
}

// receiveMismatch says how a PVC differs from the entry it would receive, or "".
func receiveMismatch(pvc *corev1.PersistentVolumeClaim, rp v1alpha1.VolSyncReceivePVC) string {
	var diffs []string
	if class := ptrString(pvc.Spec.StorageClassName); class != rp.StorageClassName {
		diffs = append(diffs, fmt.Sprintf("StorageClass %q, not %q", class, rp.StorageClassName))
	}
	if !slices.Equal(pvc.Spec.AccessModes, rp.AccessModes) {
		diffs = append(diffs, fmt.Sprintf("access modes %v, not %v", pvc.Spec.AccessModes, rp.AccessModes))
	}
	if mode, want := volumeMode(pvc.Spec.VolumeMode), volumeMode(rp.VolumeMode); mode != want {
		diffs = append(diffs, fmt.Sprintf("volume mode %s, not %s", mode, want))
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(rp.Capacity) != 0 {
		diffs = append(diffs, fmt.Sprintf("requested size %s, not %s", q.String(), rp.Capacity.String()))
	}
	return strings.Join(diffs, ", ")
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// volSyncNamespaces are the namespaces that may hold the group's VolSync objects.
func volSyncNamespaces(vrg *v1alpha1.VolumeReplicationGroup) []string {
	out := slices.Clone(protectedNamespaces(vrg))
	add := func(ns string) {
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	for _, rp := range receivePVCs(vrg) {
		add(rp.PVCNamespace)
	}
	if vrg.Spec.VolSync != nil {
		for _, d := range vrg.Spec.VolSync.Destinations {
			add(d.PVCNamespace)
		}
	}
	slices.Sort(out)
	return out
}

// primaryVolSync makes a primary stop receiving: status.volSyncDestinations is cleared and the
// group's ReplicationDestinations are removed, once the restore of a promotion no longer needs
// them: every PVC restored from its latest image and Bound, and ClusterDataReady recording it
// in the status (the pass after the one that completed it), so that a later pass, even of a new
// generation, knows the PVCs as this promotion's without their destinations. A PVC of a class
// that binds on its first consumer completes the restore while still Pending; its image is
// released, and the destinations go, once it is Bound (firstconsumer.go).
func (r *Reconciler) primaryVolSync(ctx context.Context, sc *scope) (ctrl.Result, error) {
	sc.vrg.Status.VolSyncDestinations, sc.vrg.Status.ReceivedSyncTime = nil, nil
	vs := r.volSync()
	if vs == nil {
		return ctrl.Result{}, nil
	}
	if sc.restore != nil && !sc.restore.done {
		if sc.restore.complete() {
			return ctrl.Result{RequeueAfter: requeueWaitingForStorage}, nil
		}
		return ctrl.Result{}, nil
	}
	waiting, err := r.releaseConsumedImages(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting {
		// A restored PVC waits for its first consumer with its image held: the destinations
		// stay until it is Bound (firstconsumer.go).
		return ctrl.Result{RequeueAfter: requeueWaitingForStorage}, nil
	}
	var errs []error
	result := ctrl.Result{}
	for _, ns := range volSyncNamespaces(sc.vrg) {
		gone, err := vs.DeleteGroupObjects(ctx, sc.vrg, ns, volsync.GroupDeletion{Keep: func(kind, _ string) bool { return kind == "ReplicationSource" }})
		if err != nil {
			errs = append(errs, err)
		} else if !gone {
			result = ctrl.Result{RequeueAfter: requeueWaitingForStorage}
		}
	}
	return result, errors.Join(errs...)
}
