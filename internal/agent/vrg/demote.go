package vrg

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// requeueWaitingForConsumers: a PVC to demote is still used by a pod or a VolumeAttachment.
// Watches on both wake the group when they go; this bounds the wait for what they miss.
const requeueWaitingForConsumers = 5 * time.Second

// Demotion (DESIGN.md, PVC rules 1 and 3). A secondary group makes every selected PVC on this
// cluster secondary so the peer's data wins:
//
//   - action Failover (this cluster was failed away from, and may just have come back): a PVC
//     that still exists does not block. Once no pod names it and no VolumeAttachment attaches
//     its PV, its replication is demoted with resync, so writes made here after the peer's
//     promotion are discarded and the peer's next sync replaces them. The PVC, its PV and the
//     stored metadata stay; so do the PVC's protection finalizer and label, since the group
//     still protects it (as secondary) and unprotecting is the group's deletion's job.
//   - action Relocate: the demotion must carry every write, so no consumer may appear between
//     the consumer check and the demotion. fenceRelocation first fences the PVCs (the group's
//     drover.io/fence annotation, the namespaces' drover.io/fenced label) and probes until the
//     API server refuses new pods that mount them; then the consumer check; then the demotion,
//     without autoResync (after the storage's final mirror both images are equal, and nothing
//     written here may be discarded). finishRelocation records status.finalSync once every PVC
//     is secondary and synced after the demotion. An agent without the fence refuses to demote
//     (FenceNotAvailable): demoting without it could lose writes.
//   - no action: a secondary group with PVCs but no reason given is not demoted (nothing says
//     whether the peer's data may win); the PVC reports it.
//
// A group that selects no PVC here (the usual secondary: the peer protects them) is simply
// Secondary.

// prepareDemotions finds, for every selected PVC of a secondary group, its PV and backend and
// whether the backend already shows it demoted as the group's action asks (a settled
// secondary, woken at each of the storage's syncs), so that fenceRelocation fences and
// demotePVCs checks consumers only for what is left to demote. Problems land in the PVC's
// result; API failures are returned.
func (r *Reconciler) prepareDemotions(ctx context.Context, sc *scope) (ctrl.Result, error) {
	return ctrl.Result{}, forEachPVC(sc, func(ps *pvcState) error {
		ps.secondary = true
		return r.prepareDemotion(ctx, sc, ps)
	})
}

// demotion is how a pass demotes one bound PVC.
type demotion struct {
	backend replication.Backend
	demoter replication.Demoter
	pc      *replication.PVCContext
	// resync is how the group's action demotes (with resync for a failover).
	resync bool
	// done is true when the backend shows the PVC already demoted so (DemotionObserver):
	// nothing can write to it any more, so neither the fence nor the consumer check is needed.
	done bool
}

// prepareDemotion sets ps.demotion for a bound PVC whose backend can demote it, or ps.result.
func (r *Reconciler) prepareDemotion(ctx context.Context, sc *scope, ps *pvcState) error {
	pvc := ps.pvc
	if pvc.Spec.StorageClassName != nil {
		ps.storageClass = *pvc.Spec.StorageClassName
	}
	if pvc.Spec.VolumeName == "" {
		// Never bound: no volume, so nothing replicates and nothing can be demoted.
		ps.result = replication.Done()
		return nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return fmt.Errorf("failed to get PV %s of PVC %s: %w", pvc.Spec.VolumeName, ps.key(), err)
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
	demoter, ok := backend.(replication.Demoter)
	if !ok {
		ps.result = replication.Failed(v1alpha1.ReasonBackendNotAvailable, fmt.Sprintf(
			"PVC %s: backend %s of this agent cannot demote a PVC", ps.key(), backend.Name()))
		return nil
	}
	d := &demotion{backend: backend, demoter: demoter, resync: sc.vrg.Spec.Action == v1alpha1.ActionFailover, pc: &replication.PVCContext{
		VRG: sc.vrg, PVC: pvc, PV: pv, StorageClassName: ps.storageClass, Provisioner: provisioner, Interval: sc.interval,
		MoverSecurityContext: groupMoverUser(sc.vrg, pvc.Namespace, pvc.Name), Group: labelledGroup(sc.vrg, pvc.Labels),
	}}
	ps.group = d.pc.Group
	// Only an action says how a PVC is demoted; without one demotionAllowed explains the problem.
	if observer, ok := backend.(replication.DemotionObserver); ok && sc.vrg.Spec.Action != "" {
		d.done = observer.IsDemoted(ctx, d.pc, d.resync)
		// A PVC the application deleted here, which this agent demoted in this generation, may
		// have had its VolumeReplication released already (keepReplica): it stays demoted, so
		// that its release completes rather than a new VolumeReplication being made for it.
		if !d.done && !pvc.DeletionTimestamp.IsZero() {
			d.done = r.written.demotedAlready(sc.vrg, pvc.UID)
		}
	} else if sc.vrg.Spec.Action != "" {
		// A backend that cannot tell (VolSync: a demoted PVC is one whose ReplicationSource is
		// gone, which a cache that lags cannot prove) is trusted on this agent's own record: a
		// PVC it demoted in this generation stays so, since only a primary, in another
		// generation, makes a source again, and a relocation's final sync comes before the
		// demotion. Without that, a settled secondary probed the fence and listed its PVCs'
		// consumers live at every pass (eight requests, five passes a second).
		d.done = r.written.demotedAlready(sc.vrg, pvc.UID)
	}
	ps.demotion = d
	return nil
}

// demotePVCs demotes every selected PVC prepareDemotions found a backend for.
func (r *Reconciler) demotePVCs(ctx context.Context, sc *scope) (ctrl.Result, error) {
	err := forEachPVC(sc, func(ps *pvcState) error {
		if ps.demotion == nil {
			return nil
		}
		return r.demotePVC(ctx, sc, ps)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: pvcsRequeue(sc.pvcs, false)}, nil
}

// demotePVC demotes one PVC once nothing uses it; a PVC already demoted is only observed.
// Problems land in ps.result; API failures are returned.
func (r *Reconciler) demotePVC(ctx context.Context, sc *scope, ps *pvcState) error {
	d, pvc := ps.demotion, ps.pvc
	if !d.done {
		// A relocation behind an enforced fence re-checks uncached: nothing may slip in between.
		users, err := r.consumers(ctx, pvc, sc.vrg.Spec.Action == v1alpha1.ActionRelocate && sc.fenced)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			ps.result = replication.Retry(requeueWaitingForConsumers, v1alpha1.ReasonPVCInUse, inUseMessage(ps.key(), users))
			return nil
		}
		if ok, err := r.demotionAllowed(ctx, sc, ps); err != nil || !ok {
			return err
		}
	}
	if fs, ok := d.backend.(replication.FinalSyncer); ok && finalSyncOpen(sc.vrg) {
		// A backend that syncs on demand runs the relocation's final sync first; its demotion
		// follows once finishRelocation recorded the sync, which the backend's Status proves.
		ps.result = r.finalSyncPVC(ctx, sc, d.pc, fs)
	} else {
		ps.result = replication.Done()
		if !d.done {
			// Once done, Demote is not called: its own read of the cache may be newer than
			// IsDemoted's, and then it would demote without the checks above.
			ps.result = d.demoter.Demote(ctx, d.pc, d.resync)
		}
		if ps.result.IsDone() {
			r.written.setDemoted(sc.vrg, pvc.UID)
		}
		if ps.result.IsDone() && !pvc.DeletionTimestamp.IsZero() {
			// The application deleted the PVC here: now that it is secondary, let the deletion
			// complete and keep the replica for a later promotion.
			res, err := r.keepReplica(ctx, sc, pvc, false)
			if err != nil {
				return err
			}
			ps.result, ps.release = res, ""
			if res.IsDone() && res.Message != "" {
				ps.result, ps.release = replication.Done(), res.Message
			}
		}
	}
	var err error
	if ps.sync, err = d.backend.Status(ctx, d.pc); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Demoted PVC", "pvc", klog.KObj(pvc), "backend", ps.backend, "result", ps.result.String())
	return nil
}

// demotionAllowed says whether a PVC nothing uses may be demoted now for the group's action: a
// failover's with resync (the peer's data wins); a relocation's only behind the enforced fence,
// without resync (both images hold the same data after the final mirror, and a relocation never
// discards what this cluster wrote). When not, ps.result says why.
func (r *Reconciler) demotionAllowed(ctx context.Context, sc *scope, ps *pvcState) (bool, error) {
	switch sc.vrg.Spec.Action {
	case v1alpha1.ActionFailover:
		return true, nil
	case v1alpha1.ActionRelocate:
		if !r.Fence {
			ps.result = replication.Failed(v1alpha1.ReasonFenceNotAvailable, fmt.Sprintf(
				"PVC %s is not demoted: a relocation demotes only behind the admission webhook that fences new consumers of the PVC, and this drover agent runs without it; use action Failover to demote with resync (writes made here since the peer's last sync are discarded)",
				ps.key()))
			return false, nil
		}
		if !sc.fenced {
			ps.result = replication.Retry(requeueWaitingForFence, v1alpha1.ReasonProgressing, fmt.Sprintf(
				"PVC %s is not demoted yet: waiting for the API server to enforce the fence that refuses new pods mounting it", ps.key()))
			return false, nil
		}
		return true, r.markDemotion(ctx, sc)
	}
	ps.result = replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
		"PVC %s exists on this cluster and the group is secondary without spec.action: set action Failover to demote it with resync (the peer's data wins)",
		ps.key()))
	return false, nil
}
