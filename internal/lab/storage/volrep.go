package storage

// The lab's csi-addons VolumeReplication semantics, modelled on RBD snapshot mirroring driven by
// the csi-addons controller (csi-addons/kubernetes-csi-addons d4d7fea4,
// internal/controller/replication.storage/) with ceph-csi (internal/csi-addons/rbd/replication.go):
//
//   - primary: the local image is writable; every schedulingInterval of its
//     VolumeReplicationClass (parameter "schedulingInterval": ceph-csi's form, a number and m, h
//     or d, or, for the lab's speed, a Go duration of at least a second; default 1m) a
//     point-in-time copy is taken under the image lock and applied atomically on the peer's
//     image, which becomes a read-only secondary with the primary's epoch.
//   - promotion raises the image's epoch and always succeeds. csi-addons asks without force
//     first; ceph-csi answers FailedPrecondition while the peer's image is not a demoted,
//     synced secondary (the peer is unreachable, or still primary), and csi-addons retries at
//     once with force (markVolumeAsPrimary, volumePromotionKnownErrors). So a promotion while
//     the peer holds a reachable primary makes both images primary and both writable: the
//     storage never protects a caller from two primaries.
//   - two primaries never mirror (neither is a mirror of the other): each reports
//     Replicating Unknown (ceph-csi finds no last sync in the remote status) and its
//     lastSyncTime stops advancing; Degraded stays False (Healthy), as csi-addons sets it on a
//     primary. The same holds for a primary whose peer was promoted after it (a newer epoch)
//     and for a primary whose peer is unreachable.
//   - secondary: the image is read-only and receives the peer primary's mirror. Demoting a
//     primary first makes the image read-only and then, when the peer is reachable, sends a
//     final mirror, so a relocation carries every write. A primary demoted after its peer was
//     promoted with a newer epoch has diverged (a split brain): it needs a resync, which
//     autoResync or replicationState "resync" grants, and then the peer's next mirror replaces
//     its data.
//   - conditions and reasons are csi-addons' own (status.go): after a demotion Completed True
//     (Demoted), Degraded True (VolumeDegraded) and Resyncing while the resync runs, then
//     Degraded False (Healthy) and Resyncing False (NotResyncing) once the peer holds every
//     write; a secondary reports no lastSyncTime; a request that cannot be served is Completed
//     False (FailedToPromote, FailedToDemote) with Degraded True (Error).
//   - the PVC: as csi-addons does (finalizers.go, pvc.go), the controller annotates the PVC with
//     replication.storage.openshift.io/volume-replication-name and adds the finalizer
//     replication.storage.openshift.io/pvc-protection, and removes both only when the
//     VolumeReplication is deleted: a PVC deleted while its VolumeReplication exists stays
//     Terminating.
//
// The storage of a stopped cluster runs no controller, so it neither sends nor receives; its
// peer sees it unreachable through the liveness lock.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

const (
	// SchedulingIntervalParameter is the VolumeReplicationClass parameter that sets the mirror
	// interval, as csi-addons' RBD driver names it.
	SchedulingIntervalParameter = "schedulingInterval"
	defaultSchedulingInterval   = time.Minute
	minSchedulingInterval       = time.Second

	// VolumeReplicationFinalizer is the finalizer csi-addons puts on a VolumeReplication.
	VolumeReplicationFinalizer = "replication.storage.openshift.io"
	// PVCProtectionFinalizer is the finalizer csi-addons puts on a replicated PVC, removed only
	// when its VolumeReplication is deleted.
	PVCProtectionFinalizer = "replication.storage.openshift.io/pvc-protection"
	// VolumeReplicationNameAnnotation names, on a replicated PVC, the VolumeReplication that owns it.
	VolumeReplicationNameAnnotation = "replication.storage.openshift.io/volume-replication-name"

	// volRepStatusRefresh is how often a VolumeReplication's status is refreshed while nothing
	// else is due (a secondary learns of received mirrors this way).
	volRepStatusRefresh = 2 * time.Second
	// volRepWaitRetry is the retry delay while a prerequisite (PVC bound, class) is missing.
	volRepWaitRetry = 2 * time.Second
	// volRepWorkers mirror that many images at once, as a storage system mirrors its images
	// independently. With one, at 100 volumes and a 5 s interval the lab storage itself synced
	// each only every 7 s on average and up to 14 s apart (its status patch is a round trip to
	// a busy API server), so every group rightly reported SyncStale.
	volRepWorkers = 2
)

// Reasons of the VolumeReplication conditions: csi-addons' own
// (api/replication.storage/v1alpha1/volumereplication_types.go), and no other.
const (
	ReasonPromoted        = "Promoted"
	ReasonDemoted         = "Demoted"
	ReasonFailedToPromote = "FailedToPromote"
	ReasonFailedToDemote  = "FailedToDemote"
	ReasonError           = "Error"
	ReasonVolumeDegraded  = "VolumeDegraded"
	ReasonHealthy         = "Healthy"
	ReasonResyncTriggered = "ResyncTriggered"
	ReasonNotResyncing    = "NotResyncing"
	ReasonReplicating     = "Replicating"
)

// Operations recorded in an image's state (ImageState.Operation): how its role last changed.
const (
	opPromoted      = "Promoted"
	opForcePromoted = "ForcePromoted"
	opDemoted       = "Demoted"
)

func setupVolRep(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-volrep").
		For(&replicationv1alpha1.VolumeReplication{}).WithOptions(controller.Options{MaxConcurrentReconciles: volRepWorkers}).
		Complete(reconcilerFunc(s.reconcileVolRep))
}

// volRepScope is the per-request state of one VolumeReplication reconcile.
type volRepScope struct {
	vr       *replicationv1alpha1.VolumeReplication
	handle   string
	interval time.Duration
	now      time.Time
}

func (s *store) reconcileVolRep(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vr := &replicationv1alpha1.VolumeReplication{}
	if err := s.client.Get(ctx, req.NamespacedName, vr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, s.deleteVolRep(ctx, vr)
	}
	if controllerutil.AddFinalizer(vr, VolumeReplicationFinalizer) {
		if err := s.client.Update(ctx, vr); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer to VolumeReplication %s: %w", req.NamespacedName, err)
		}
	}
	before := vr.DeepCopy()
	sc := &volRepScope{vr: vr, now: time.Now()}
	log := ctrl.LoggerFrom(ctx)
	log.V(1).Info("Reconciling VolumeReplication", "replicationState", vr.Spec.ReplicationState)
	result, err := s.volRepPhase(ctx, sc)
	log.V(1).Info("Reconciled VolumeReplication", "state", vr.Status.State, "took", time.Since(sc.now).String())
	vr.Status.ObservedGeneration = vr.Generation
	if perr := patchStatusIfChanged(ctx, s.client, vr, before); perr != nil && err == nil {
		err = fmt.Errorf("failed to update status of VolumeReplication %s: %w", req.NamespacedName, perr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// volRepPhase protects the PVC, resolves the image and runs the asked operation, recording the
// outcome in the VolumeReplication's status.
func (s *store) volRepPhase(ctx context.Context, sc *volRepScope) (ctrl.Result, error) {
	problem, err := s.protectPVC(ctx, sc.vr)
	if err != nil {
		return ctrl.Result{}, err
	}
	var handle string
	var interval time.Duration
	if problem == "" {
		if handle, interval, problem, err = s.resolveImage(ctx, sc.vr); err != nil {
			return ctrl.Result{}, err
		}
	}
	if problem != "" {
		sc.vr.Status.State = replicationv1alpha1.UnknownState
		sc.vr.Status.Message = problem
		setFailedCondition(sc.vr, problem)
		return ctrl.Result{RequeueAfter: volRepWaitRetry}, nil
	}
	sc.handle, sc.interval = handle, interval
	switch sc.vr.Spec.ReplicationState {
	case replicationv1alpha1.Primary:
		return s.primary(sc)
	case replicationv1alpha1.Secondary, replicationv1alpha1.Resync:
		return s.secondary(sc)
	default:
		msg := fmt.Sprintf("replicationState %q is not primary, secondary or resync", sc.vr.Spec.ReplicationState)
		sc.vr.Status.Message = msg
		setFailedCondition(sc.vr, msg)
		return ctrl.Result{}, nil
	}
}

// ParseSchedulingInterval parses a VolumeReplicationClass's schedulingInterval: ceph-csi's form
// (a number and m, h or d: "5m", "1h", "1d"), or, which ceph-csi refuses but the lab accepts for
// its speed, a Go duration ("5s").
func ParseSchedulingInterval(raw string) (time.Duration, error) {
	if n := len(raw); n > 1 && raw[n-1] == 'd' {
		days, err := strconv.ParseUint(raw[:n-1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", raw)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(raw)
}

// resolveImage finds the image behind the VolumeReplication's PVC and its class's interval.
// problem is non-empty when something the user or a controller must provide is missing.
func (s *store) resolveImage(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (handle string, interval time.Duration, problem string, err error) {
	class := &replicationv1alpha1.VolumeReplicationClass{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: vr.Spec.VolumeReplicationClass}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return "", 0, fmt.Sprintf("VolumeReplicationClass %s not found", vr.Spec.VolumeReplicationClass), nil
		}
		return "", 0, "", err
	}
	interval = defaultSchedulingInterval
	if raw, ok := class.Spec.Parameters[SchedulingIntervalParameter]; ok {
		d, perr := ParseSchedulingInterval(raw)
		if perr != nil || d < minSchedulingInterval {
			return "", 0, fmt.Sprintf("VolumeReplicationClass %s: %s %q must be a number of minutes, hours or days (5m, 1h, 1d) or a duration of at least %s", class.Name, SchedulingIntervalParameter, raw, minSchedulingInterval), nil //nolint:nilerr // a bad parameter is the user's to fix; the status says so
		}
		interval = d
	}
	pv, problem, err := s.boundPV(ctx, vr)
	if problem != "" || err != nil {
		return "", 0, problem, err
	}
	if pv.Spec.CSI == nil || !s.ours(pv.Spec.CSI.Driver) || pv.Spec.CSI.Driver != class.Spec.Provisioner {
		return "", 0, fmt.Sprintf("PV %s is not a volume of VolumeReplicationClass %s's provisioner %s", pv.Name, class.Name, class.Spec.Provisioner), nil
	}
	return pv.Spec.CSI.VolumeHandle, interval, "", nil
}

// boundPV returns the PV of the VolumeReplication's PVC, or why there is none yet.
func (s *store) boundPV(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (*corev1.PersistentVolume, string, error) {
	pvc, problem, err := s.sourcePVC(ctx, vr)
	if problem != "" || err != nil {
		return nil, problem, err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Sprintf("PVC %s/%s is not bound yet", pvc.Namespace, pvc.Name), nil
	}
	pv := &corev1.PersistentVolume{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, "", fmt.Errorf("failed to get PV %s: %w", pvc.Spec.VolumeName, err)
	}
	return pv, "", nil
}

// sourcePVC returns the VolumeReplication's PVC, or why there is none.
func (s *store) sourcePVC(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (*corev1.PersistentVolumeClaim, string, error) {
	if vr.Spec.DataSource.Kind != "PersistentVolumeClaim" {
		return nil, fmt.Sprintf("dataSource kind %q is not supported; only PersistentVolumeClaim", vr.Spec.DataSource.Kind), nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: vr.Namespace, Name: vr.Spec.DataSource.Name}, pvc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, fmt.Sprintf("PVC %s/%s not found", vr.Namespace, vr.Spec.DataSource.Name), nil
		}
		return nil, "", err
	}
	return pvc, "", nil
}

// observe reads the image's local state and, when the peer is reachable, the peer's.
func (s *store) observe(handle string) (peerUp bool, peer, local ImageState, err error) {
	if peerUp = s.images.PeerReachable(); peerUp {
		if peer, err = s.images.PeerState(handle); err != nil {
			return false, peer, local, err
		}
	}
	local, err = s.images.State(handle)
	return peerUp, peer, local, err
}

// primary promotes the image when needed and mirrors it when a mirror is due.
func (s *store) primary(sc *volRepScope) (ctrl.Result, error) {
	vr := sc.vr
	peerUp, peer, local, err := s.observe(sc.handle)
	if err != nil {
		return ctrl.Result{}, err
	}
	if local.Role != RolePrimary {
		// Promoted without force only when the peer's image is a secondary that holds every
		// write; otherwise ceph-csi answers FailedPrecondition and csi-addons forces it.
		operation := opPromoted
		if !peerUp || peer.Role != RoleSecondary || peer.FinalMirrorPending {
			operation = opForcePromoted
		}
		if local, err = s.images.UpdateState(sc.handle, func(st *ImageState) {
			st.Epoch = max(st.Epoch, peer.Epoch) + 1
			st.Role, st.NeedsResync = RolePrimary, false
			st.Operation, st.OperationTime = operation, &sc.now
			// The mirror schedule starts anew: the first mirror from this primary is due now.
			st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = nil, 0, 0
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	setPromotedConditions(vr, local)
	vr.Status.State = replicationv1alpha1.PrimaryState
	vr.Status.Message = ""

	requeue := volRepStatusRefresh
	if problem := notMirroring(sc.handle, peerUp, peer, local); problem != "" {
		setReplicatingCondition(vr, metav1.ConditionUnknown, "replication status is unknown: "+problem)
	} else {
		if due := nextMirror(local, sc.interval); !due.After(sc.now) {
			if local, err = s.mirror(sc.handle, local.Epoch); err != nil {
				return ctrl.Result{}, err
			}
		}
		setReplicatingCondition(vr, metav1.ConditionTrue, "is replicating")
		requeue = max(time.Until(nextMirror(local, sc.interval)), 100*time.Millisecond)
	}
	// As csi-addons does, a last sync the storage cannot report leaves the one reported before.
	if local.LastSyncTime != nil || vr.Status.LastSyncTime == nil {
		setSyncStatus(vr, local)
	}
	return ctrl.Result{RequeueAfter: min(requeue, sc.interval)}, nil
}

// notMirroring says why a primary image cannot mirror to its peer now; empty when it can.
func notMirroring(handle string, peerUp bool, peer, local ImageState) string {
	switch {
	case !peerUp:
		return "the peer cluster's storage is unreachable; mirroring resumes when it returns"
	case peer.Role == RolePrimary:
		return fmt.Sprintf("split-brain: image %s is primary on both clusters (epochs %d here, %d on the peer)", handle, local.Epoch, peer.Epoch)
	case peer.Epoch > local.Epoch:
		// The peer was promoted after this primary and then had its mirroring disabled (its
		// VolumeReplication deleted): its image is no replica to overwrite, as RBD mirroring
		// never overwrites an image that is not a mirror of this one.
		return fmt.Sprintf("image %s was promoted on the peer after this primary (epochs %d here, %d on the peer) and is not a mirror of it", handle, local.Epoch, peer.Epoch)
	case peer.NeedsResync:
		return "the peer's image diverged and waits for a resync before it receives mirrors"
	}
	return ""
}
func nextMirror(st ImageState, interval time.Duration) time.Time {
	if st.LastSyncTime == nil {
		return time.Time{}
	}
	return st.LastSyncTime.Add(interval)
}

// mirror sends a point-in-time copy of the image to the peer and applies it there atomically.
// The copy is taken under the image lock, so it holds whole records only; the peer's image
// becomes a secondary of this epoch.
func (s *store) mirror(handle string, epoch int64) (ImageState, error) {
	began := time.Now()
	staged := filepath.Join(filepath.Dir(s.images.PeerVolumeDir(handle)), fmt.Sprintf(".incoming-%s-%d", handle, began.UnixNano()))
	unlock := s.images.Lock(handle)
	taken := time.Now()
	n, err := CopyTree(s.images.VolumeDir(handle), staged)
	unlock()
	if err != nil {
		_ = os.RemoveAll(staged)
		return ImageState{}, err
	}
	if err := ReplaceDir(staged, s.images.PeerVolumeDir(handle)); err != nil {
		_ = os.RemoveAll(staged)
		return ImageState{}, err
	}
	took := time.Since(began)
	if _, err := s.images.UpdatePeerState(handle, func(st *ImageState) {
		st.Role, st.Epoch = RoleSecondary, epoch
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &taken, took, n
	}); err != nil {
		return ImageState{}, err
	}
	return s.images.UpdateState(handle, func(st *ImageState) {
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &taken, took, n
	})
}

// secondary demotes the image when needed (with a final mirror) and handles resync.
func (s *store) secondary(sc *volRepScope) (ctrl.Result, error) {
	vr := sc.vr
	peerUp, peer, local, err := s.observe(sc.handle)
	if err != nil {
		return ctrl.Result{}, err
	}
	if local.Role != RoleSecondary {
		// A primary whose peer was promoted after it (a higher epoch) holds writes the new
		// primary never saw: it diverged and must be resynced, never mirrored back.
		// (The peer may be primary, or no longer mirrored: its image is not to be overwritten.)
		diverged := local.Role == RolePrimary && peerUp && peer.Epoch > local.Epoch
		// Read-only first, under the image lock: no write lands after this point.
		unlock := s.images.Lock(sc.handle)
		local, err = s.images.UpdateState(sc.handle, func(st *ImageState) {
			st.Role, st.NeedsResync = RoleSecondary, diverged
			st.Operation, st.OperationTime = opDemoted, &sc.now
			st.FinalMirrorPending = !diverged
		})
		unlock()
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	if local.FinalMirrorPending {
		if local, err = s.finalMirror(sc.handle, local, peerUp, peer); err != nil {
			return ctrl.Result{}, err
		}
	}
	resync := vr.Spec.ReplicationState == replicationv1alpha1.Resync || vr.Spec.AutoResync
	if local.NeedsResync && resync {
		if local, err = s.images.UpdateState(sc.handle, func(st *ImageState) {
			st.NeedsResync = false
			// Mark the local data stale so the status shows resyncing until a mirror arrives.
			st.LastSyncTime = nil
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	vr.Status.State = replicationv1alpha1.SecondaryState
	vr.Status.Message = ""
	setDemotedConditions(vr, local)
	// As csi-addons does, a secondary reports no last sync: the primary's VolumeReplication
	// does, and a demoted volume's Degraded False says that it is in sync with its peer.
	vr.Status.LastSyncTime, vr.Status.LastSyncDuration, vr.Status.LastSyncBytes = nil, nil, nil
	return ctrl.Result{RequeueAfter: volRepStatusRefresh}, nil
}

// finalMirror sends a demoted image's final mirror once the peer can take it (reachable, not
// primary, not waiting for a resync): the writes made while it was primary reach the peer before
// it may be promoted without loss. A peer promoted since with a newer epoch never gets it: this
// image then diverged from it and needs a resync.
func (s *store) finalMirror(handle string, local ImageState, peerUp bool, peer ImageState) (ImageState, error) {
	switch {
	case peerUp && peer.Epoch > local.Epoch:
		return s.images.UpdateState(handle, func(st *ImageState) { st.FinalMirrorPending, st.NeedsResync = false, true })
	case !peerUp || peer.Role == RolePrimary || peer.NeedsResync:
		return local, nil
	}
	if _, err := s.mirror(handle, local.Epoch); err != nil {
		return ImageState{}, err
	}
	return s.images.UpdateState(handle, func(st *ImageState) { st.FinalMirrorPending = false })
}

// deleteVolRep disables mirroring of the image (a primary becomes an ordinary writable volume;
// a secondary stays read-only until a VolumeReplication promotes it), then releases the PVC as
// csi-addons does: its annotation and pvc-protection finalizer go, then the VolumeReplication's
// finalizer.
func (s *store) deleteVolRep(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	if !controllerutil.ContainsFinalizer(vr, VolumeReplicationFinalizer) {
		return nil
	}
	handle, _, problem, err := s.resolveImage(ctx, vr)
	if err != nil {
		return err
	}
	if problem == "" {
		if _, err := s.images.UpdateState(handle, func(st *ImageState) {
			if st.Role == RolePrimary {
				st.Role = RoleNone
			}
		}); err != nil {
			return err
		}
	}
	if err := s.releasePVC(ctx, vr); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(vr, VolumeReplicationFinalizer)
	if err := s.client.Update(ctx, vr); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func setSyncStatus(vr *replicationv1alpha1.VolumeReplication, st ImageState) {
	if st.LastSyncTime == nil {
		vr.Status.LastSyncTime, vr.Status.LastSyncDuration, vr.Status.LastSyncBytes = nil, nil, nil
		return
	}
	bytes := st.LastSyncBytes
	vr.Status.LastSyncTime = &metav1.Time{Time: *st.LastSyncTime}
	vr.Status.LastSyncDuration = &metav1.Duration{Duration: st.LastSyncDuration}
	vr.Status.LastSyncBytes = &bytes
}

// patchStatusIfChanged patches the status of vr from before, and sends nothing when the patch
// is empty: a refresh that found nothing new (times compare as the API stores them, to the
// second) costs the API server no request. A real driver updates a status when it changes.
func patchStatusIfChanged(ctx context.Context, c client.Client, vr, before *replicationv1alpha1.VolumeReplication) error {
	patch := client.MergeFrom(before)
	data, err := patch.Data(vr)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		return nil
	}
	return c.Status().Patch(ctx, vr, client.RawPatch(patch.Type(), data))
}
