package csiaddons

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
//   - two primaries never mirror (neither is a mirror of the other): ceph-csi finds no last sync
//     in the remote status and answers NotFound, so csi-addons leaves each one's Replicating
//     condition as it was (True, from before) and its lastSyncTime stops advancing; Degraded
//     stays False (Healthy), as csi-addons sets it on a primary. A primary whose peer was
//     promoted after it (a newer epoch) or is unreachable reports Replicating Unknown.
//   - secondary: the image is read-only and receives the peer primary's mirror. Demoting a
//     primary first makes the image read-only and then, when the peer is reachable, sends a
//     final mirror, so a relocation carries every write. A primary demoted after its peer was
//     promoted with a newer epoch has diverged (a split brain): it needs a resync, which
//     autoResync or replicationState "resync" grants, and then the peer's next mirror replaces
//     its data.
//   - conditions and reasons are csi-addons' own (status.go): after a demotion Completed True
//     (Demoted) and Degraded True (VolumeDegraded); then, while ceph-csi's resync is not ready
//     (a secondary of a live primary is never ready), Degraded True and Resyncing True
//     (ResyncTriggered); Degraded False (Healthy) and Resyncing False (NotResyncing) only once
//     both sites are demoted and in sync (a relocation's final mirror); a split-brained secondary
//     without force, or one with no synced snapshot yet, FailedToResync; a secondary reports no
//     lastSyncTime; a request that cannot be served is Completed False (FailedToPromote,
//     FailedToDemote) with Degraded True (Error).
//   - the PVC: as csi-addons does (finalizers.go, pvc.go), the controller annotates the PVC with
//     replication.storage.openshift.io/volume-replication-name and adds the finalizer
//     replication.storage.openshift.io/pvc-protection, and removes both only when the
//     VolumeReplication is deleted: a PVC deleted while its VolumeReplication exists stays
//     Terminating.
//   - when csi-addons reports: only at its own reconciles (volrep_report.go): a primary's
//     lastSyncTime is refreshed every InfoReconcileInterval and read before the mirror due at the
//     same moment, so it can be up to about that plus the interval old; a secondary is re-checked
//     15 s after its demotion and every 30 s after, and a secondary of a live primary never
//     reports in sync (volrep_status.go).
//   - deleting a VolumeReplication disables mirroring as ceph-csi does (volrep_delete.go): a
//     primary becomes an ordinary volume and rbd-mirror deletes the peer's non-primary copy; a
//     secondary is released only while its image replays a live primary, and otherwise the
//     deletion is refused and retried, keeping both finalizers.
//   - an image rbd-mirror deleted (a secondary whose peer's primary had its mirroring disabled)
//     is answered NotFound at every later reconcile, as ceph-csi answers for a missing image;
//     csi-addons reports FailedToDemote and keeps the state it reported before (volrep_gone.go).
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
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
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

	// volRepStoragePoll is how often the storage looks at an image while nothing is scheduled:
	// a secondary's final mirror waiting for its peer, a primary waiting for its peer to return
	// (rbd-mirror's own pace, not csi-addons' reports).
	volRepStoragePoll = 2 * time.Second
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
	ReasonFailedToResync  = "FailedToResync"
	ReasonError           = "Error"
	ReasonVolumeDegraded  = "VolumeDegraded"
	ReasonHealthy         = "Healthy"
	ReasonResyncTriggered = "ResyncTriggered"
	ReasonNotResyncing    = "NotResyncing"
	ReasonReplicating     = "Replicating"
)

// Operations recorded in an image's state (state.ImageState.Operation): how its role last changed.
const (
	opPromoted      = "Promoted"
	opForcePromoted = "ForcePromoted"
	opDemoted       = "Demoted"
)

// store is the shared driver context (internal/lab/storage/driver) with what csi-addons'
// controller keeps of its own.
type store struct {
	*driver.Store
	// reports is when csi-addons would next reconcile each VolumeReplication (volrep_report.go).
	reports reportSchedule
}

// Setup registers the VolumeReplication controller and the VolumeGroupReplication controllers
// (volgroup.go) with the manager.
func Setup(mgr ctrl.Manager, d *driver.Store) error {
	s := &store{Store: d}
	if err := setupVolRep(mgr, s); err != nil {
		return err
	}
	return setupVolGroup(mgr, s)
}

func setupVolRep(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-volrep").
		For(&replicationv1alpha1.VolumeReplication{}).WithOptions(controller.Options{MaxConcurrentReconciles: volRepWorkers}).
		Complete(driver.ReconcilerFunc(s.reconcileVolRep))
}

// volRepScope is the per-request state of one VolumeReplication reconcile.
type volRepScope struct {
	vr *replicationv1alpha1.VolumeReplication
	// img is the replicated image: the PVC's volume, or the VolumeGroupReplication's group.
	img      image
	interval time.Duration
	// refresh is how often csi-addons refreshes the status of a primary of this class.
	refresh time.Duration
	now     time.Time
	// report is true when csi-addons reconciles the VolumeReplication now, and so acts on its
	// spec and writes its status; otherwise only the storage acts (mirrors) and the status stays.
	report bool
	// requeueReport is the requeue csi-addons asks for when it reports; zero for none.
	requeueReport time.Duration
}

func (s *store) reconcileVolRep(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vr := &replicationv1alpha1.VolumeReplication{}
	if err := s.Client.Get(ctx, req.NamespacedName, vr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, s.deleteVolRep(ctx, vr)
	}
	if controllerutil.AddFinalizer(vr, VolumeReplicationFinalizer) {
		if err := s.Client.Update(ctx, vr); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer to VolumeReplication %s: %w", req.NamespacedName, err)
		}
	}
	before := vr.DeepCopy()
	sc := &volRepScope{vr: vr, now: time.Now()}
	due, byTimer := s.reports.due(vr.UID, vr.Generation, sc.now)
	sc.report = due
	log := ctrl.LoggerFrom(ctx)
	log.V(1).Info("Reconciling VolumeReplication", "replicationState", vr.Spec.ReplicationState, "report", sc.report)
	result, err := s.volRepPhase(ctx, sc)
	log.V(1).Info("Reconciled VolumeReplication", "state", vr.Status.State, "took", time.Since(sc.now).String())
	if sc.report && err == nil {
		vr.Status.ObservedGeneration = vr.Generation
		s.reports.reported(vr.UID, vr.Generation, byTimer, sc.now, sc.requeueReport)
	} else {
		// csi-addons did not reconcile now, or its reconcile failed and is retried with a
		// backoff, reporting then.
		vr.Status = before.Status
	}
	if perr := patchStatusIfChanged(ctx, s.Client, vr, before); perr != nil && err == nil {
		err = fmt.Errorf("failed to update status of VolumeReplication %s: %w", req.NamespacedName, perr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if d, ok := s.reports.until(vr.UID, time.Now()); ok && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
		result.RequeueAfter = max(d, 10*time.Millisecond)
	}
	return result, nil
}

// volRepPhase protects the PVC, resolves the image and runs the asked operation, recording the
// outcome in the VolumeReplication's status when csi-addons reports.
func (s *store) volRepPhase(ctx context.Context, sc *volRepScope) (ctrl.Result, error) {
	problem, err := s.protectPVC(ctx, sc.vr)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem == "" {
		if sc.img, sc.interval, sc.refresh, problem, err = s.resolveImage(ctx, sc.vr); err != nil {
			return ctrl.Result{}, err
		}
	}
	if problem != "" {
		// csi-addons returns the error and retries with a backoff, reporting it every time; the
		// state stays what it was (GetCurrentReplicationState), Unknown only before any.
		sc.report, sc.requeueReport = true, volRepWaitRetry
		if sc.vr.Status.State == "" {
			sc.vr.Status.State = replicationv1alpha1.UnknownState
		}
		sc.vr.Status.Message = problem
		setFailedCondition(sc.vr, problem, problem)
		return ctrl.Result{RequeueAfter: volRepWaitRetry}, nil
	}
	st, err := sc.img.state()
	if err != nil {
		return ctrl.Result{}, err
	}
	if st.Deleted {
		return reportImageGone(sc)
	}
	switch sc.vr.Spec.ReplicationState {
	case replicationv1alpha1.Primary:
		return s.primary(sc)
	case replicationv1alpha1.Secondary, replicationv1alpha1.Resync:
		return s.secondary(sc)
	default:
		sc.report = true
		msg := fmt.Sprintf("replicationState %q is not primary, secondary or resync", sc.vr.Spec.ReplicationState)
		sc.vr.Status.Message = msg
		setFailedCondition(sc.vr, msg, msg)
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

// resolveImage finds the image behind the VolumeReplication's PVC, or the group behind its
// VolumeGroupReplication, its class's interval and how often csi-addons refreshes a primary's
// status for that class. problem is non-empty when something the user or a controller must
// provide is missing.
func (s *store) resolveImage(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (img image, interval, refresh time.Duration, problem string, err error) {
	class := &replicationv1alpha1.VolumeReplicationClass{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: vr.Spec.VolumeReplicationClass}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, 0, 0, fmt.Sprintf("VolumeReplicationClass %s not found", vr.Spec.VolumeReplicationClass), nil
		}
		return nil, 0, 0, "", err
	}
	interval = defaultSchedulingInterval
	raw, ok := class.Spec.Parameters[SchedulingIntervalParameter]
	if ok {
		d, perr := ParseSchedulingInterval(raw)
		if perr != nil || d < minSchedulingInterval {
			return nil, 0, 0, fmt.Sprintf("VolumeReplicationClass %s: %s %q must be a number of minutes, hours or days (5m, 1h, 1d) or a duration of at least %s", class.Name, SchedulingIntervalParameter, raw, minSchedulingInterval), nil //nolint:nilerr // a bad parameter is the user's to fix; the status says so
		}
		interval = d
	}
	if vr.Spec.DataSource.Kind == volumeGroupReplicationKind {
		img, problem, err = s.resolveGroup(ctx, vr, class)
		return img, interval, InfoReconcileInterval(raw), problem, err
	}
	pv, problem, err := s.boundPV(ctx, vr)
	if problem != "" || err != nil {
		return nil, 0, 0, problem, err
	}
	if pv.Spec.CSI == nil || !s.Ours(pv.Spec.CSI.Driver) || pv.Spec.CSI.Driver != class.Spec.Provisioner {
		return nil, 0, 0, fmt.Sprintf("PV %s is not a volume of VolumeReplicationClass %s's provisioner %s", pv.Name, class.Name, class.Spec.Provisioner), nil
	}
	return volumeImage{s: s, handle: pv.Spec.CSI.VolumeHandle}, interval, InfoReconcileInterval(raw), "", nil
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
	if err := s.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
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
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: vr.Namespace, Name: vr.Spec.DataSource.Name}, pvc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, fmt.Sprintf("PVC %s/%s not found", vr.Namespace, vr.Spec.DataSource.Name), nil
		}
		return nil, "", err
	}
	return pvc, "", nil
}

// observe reads the image's local state and, when the peer is reachable, the peer's.
func (s *store) observe(img image) (peerUp bool, peer, local state.ImageState, err error) {
	if peerUp = s.Images.PeerReachable(); peerUp {
		if peer, err = img.peerState(); err != nil {
			return false, peer, local, err
		}
	}
	local, err = img.state()
	return peerUp, peer, local, err
}

// primary promotes the image when csi-addons asks (at its reconcile), reports its status then,
// and mirrors it whenever a mirror is due. The report comes before this reconcile's mirror, as
// csi-addons reads the storage's last completed sync, not the one it is about to take.
func (s *store) primary(sc *volRepScope) (ctrl.Result, error) {
	vr := sc.vr
	peerUp, peer, local, err := s.observe(sc.img)
	if err != nil {
		return ctrl.Result{}, err
	}
	if sc.report && local.Role != state.RolePrimary {
		// Promoted without force only when the peer's image is a secondary that holds every
		// write; otherwise ceph-csi answers FailedPrecondition and csi-addons forces it.
		operation := opPromoted
		if !peerUp || peer.Role != state.RoleSecondary || peer.FinalMirrorPending {
			operation = opForcePromoted
		}
		if local, err = sc.img.update(func(st *state.ImageState) {
			st.Epoch = max(st.Epoch, peer.Epoch) + 1
			st.Role, st.NeedsResync, st.MirrorDisabled = state.RolePrimary, false, false
			st.Operation, st.OperationTime = operation, &sc.now
			// The mirror schedule starts anew: the first mirror from this primary is due now.
			st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = nil, 0, 0
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	if local.Role != state.RolePrimary {
		// Not promoted yet: csi-addons acts on the spec at its next reconcile.
		return ctrl.Result{RequeueAfter: volRepStoragePoll}, nil
	}
	problem := notMirroring(sc.img, peerUp, peer, local)
	if sc.report {
		reportPrimary(vr, local, peerUp && peer.Role == state.RolePrimary, problem)
		sc.requeueReport = sc.refresh
	}
	if problem != "" {
		return ctrl.Result{RequeueAfter: volRepStoragePoll}, nil
	}
	if due := nextMirror(local, sc.interval); !due.After(sc.now) {
		if local, err = sc.img.mirror(local.Epoch); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: max(time.Until(nextMirror(local, sc.interval)), 100*time.Millisecond)}, nil
}

// reportPrimary is csi-addons' status of a primary: promoted, and its replication as
// GetVolumeReplicationInfo tells it. With two primaries ceph-csi finds no last sync in the
// remote status and answers NotFound, which csi-addons takes as "no information": it leaves
// Replicating and lastSyncTime as they were. A last sync the storage cannot report otherwise
// also leaves the one reported before.
func reportPrimary(vr *replicationv1alpha1.VolumeReplication, local state.ImageState, twoPrimaries bool, problem string) {
	setPromotedConditions(vr, local)
	vr.Status.State = replicationv1alpha1.PrimaryState
	vr.Status.Message = ""
	if twoPrimaries {
		return
	}
	if problem != "" {
		setReplicatingCondition(vr, metav1.ConditionUnknown, "replication status is unknown: "+problem)
	} else {
		setReplicatingCondition(vr, metav1.ConditionTrue, "is replicating")
	}
	if local.LastSyncTime != nil || vr.Status.LastSyncTime == nil {
		setSyncStatus(vr, local)
	}
}

// notMirroring says why a primary image cannot mirror to its peer now; empty when it can.
func notMirroring(img image, peerUp bool, peer, local state.ImageState) string {
	switch {
	case !peerUp:
		return "the peer cluster's storage is unreachable; mirroring resumes when it returns"
	case peer.Role == state.RolePrimary:
		return fmt.Sprintf("split-brain: %s is primary on both clusters (epochs %d here, %d on the peer)", img, local.Epoch, peer.Epoch)
	case peer.Epoch > local.Epoch:
		// The peer was promoted after this primary and then had its mirroring disabled (its
		// VolumeReplication deleted): its image is no replica to overwrite, as RBD mirroring
		// never overwrites an image that is not a mirror of this one.
		return fmt.Sprintf("%s was promoted on the peer after this primary (epochs %d here, %d on the peer) and is not a mirror of it", img, local.Epoch, peer.Epoch)
	case peer.NeedsResync:
		return "the peer's image diverged and waits for a resync before it receives mirrors"
	}
	return ""
}
func nextMirror(st state.ImageState, interval time.Duration) time.Time {
	if st.LastSyncTime == nil {
		return time.Time{}
	}
	return st.LastSyncTime.Add(interval)
}

// mirrorVolume sends a crash-consistent copy of the image to the peer (CopyVolume: under the
// image lock, the pods using it stopped, as an RBD mirror snapshot is taken at one instant) and
// applies it there atomically; the peer's image becomes a secondary of this epoch.
func (s *store) mirrorVolume(handle string, epoch int64) (state.ImageState, error) {
	began := time.Now()
	staged := filepath.Join(filepath.Dir(s.Images.PeerVolumeDir(handle)), fmt.Sprintf(".incoming-%s-%d", handle, began.UnixNano()))
	// No write acknowledged before now is missing from the copy, taken after this.
	taken := time.Now()
	n, err := s.CopyVolume(handle, staged)
	if err != nil {
		_ = os.RemoveAll(staged)
		return state.ImageState{}, err
	}
	took := time.Since(began)
	// The copy is applied under the peer's state lock, which a promotion there takes too: a
	// peer promoted while the copy was taken is never overwritten by it.
	var applied bool
	if _, err := s.Images.UpdatePeerState(handle, func(st *state.ImageState) {
		if promotedSince(*st, epoch) {
			return
		}
		if err = driver.ReplaceDir(staged, s.Images.PeerVolumeDir(handle)); err != nil {
			return
		}
		applied = true
		// A copy rbd-mirror deleted earlier is bootstrapped again.
		st.Role, st.Epoch, st.Deleted, st.MirrorDisabled = state.RoleSecondary, epoch, false, false
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &taken, took, n
	}); err != nil || !applied {
		_ = os.RemoveAll(staged)
		if err != nil {
			return state.ImageState{}, err
		}
		return s.Images.State(handle)
	}
	return s.Images.UpdateState(handle, func(st *state.ImageState) {
		st.LastSyncTime, st.LastSyncDuration, st.LastSyncBytes = &taken, took, n
	})
}

// promotedSince reports whether an image whose state is st was promoted after a mirror of epoch
// was decided on: rbd-mirror replays nothing into a primary, nor into an image of a newer epoch
// (csi-addons forced its promotion while the sender was still primary).
func promotedSince(st state.ImageState, epoch int64) bool {
	return !st.Deleted && (st.Role == state.RolePrimary || st.Epoch > epoch)
}

// secondary demotes the image when csi-addons asks, sends a demoted image's final mirror
// whenever the peer can take it (rbd-mirror's work), and at csi-addons' reconciles runs its
// resync step and reports the status (reportSecondary).
func (s *store) secondary(sc *volRepScope) (ctrl.Result, error) {
	peerUp, peer, local, err := s.observe(sc.img)
	if err != nil {
		return ctrl.Result{}, err
	}
	if deleted, err := s.deleteIfUnmirrored(sc.img, peerUp, peer, local); err != nil {
		return ctrl.Result{}, err
	} else if deleted {
		// rbd-mirror deleted the image before csi-addons' call: the driver answers NotFound.
		return reportImageGone(sc)
	}
	if sc.report && local.Role != state.RoleSecondary {
		// A primary whose peer was promoted after it (a higher epoch) holds writes the new
		// primary never saw: it diverged and must be resynced, never mirrored back.
		// (The peer may be primary, or no longer mirrored: its image is not to be overwritten.)
		diverged := local.Role == state.RolePrimary && peerUp && peer.Epoch > local.Epoch
		// Read-only first, under the image lock: no write lands after this point.
		unlock := sc.img.lock()
		local, err = sc.img.update(func(st *state.ImageState) {
			st.Role, st.NeedsResync, st.MirrorDisabled = state.RoleSecondary, diverged, false
			st.Operation, st.OperationTime = opDemoted, &sc.now
			st.FinalMirrorPending = !diverged
		})
		unlock()
		if err != nil {
			return ctrl.Result{}, err
		}
		if s.losesDemotionReports() {
			// The demotion's status write fails (volrep_lostreport.go): csi-addons retries.
			sc.report = false
			return ctrl.Result{RequeueAfter: volRepWaitRetry}, nil
		}
	}
	if local.FinalMirrorPending {
		if local, err = s.finalMirror(sc.img, local, peerUp, peer); err != nil {
			return ctrl.Result{}, err
		}
	}
	if sc.report && local.Role == state.RoleSecondary {
		if local, err = s.reportSecondary(sc, local, peerUp, peer); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: volRepStoragePoll}, nil
}

// reportSecondary is csi-addons' reconcile of a secondary. The first after a demotion marks it
// secondary and degraded and comes back in 15 s; every later one asks ceph-csi to resync (with
// force when autoResync or replicationState resync says so) and reports what it answers
// (volrep_status.go): ready only when both sites are demoted and the last snapshot exchanged;
// resyncing, re-checked every 30 s, while it replays a live primary; failed to resync, re-checked
// in 15 s, otherwise.
func (s *store) reportSecondary(sc *volRepScope, local state.ImageState, peerUp bool, peer state.ImageState) (state.ImageState, error) {
	vr := sc.vr
	first := vr.Status.State != replicationv1alpha1.SecondaryState
	vr.Status.State = replicationv1alpha1.SecondaryState
	vr.Status.Message = ""
	// As csi-addons does, a secondary reports no last sync: the primary's VolumeReplication
	// does.
	vr.Status.LastSyncTime, vr.Status.LastSyncDuration, vr.Status.LastSyncBytes = nil, nil, nil
	apimeta.RemoveStatusCondition(&vr.Status.Conditions, replicationv1alpha1.ConditionReplicating)
	if local.OperationTime != nil {
		vr.Status.LastCompletionTime = &metav1.Time{Time: *local.OperationTime}
	}
	if first {
		setDemotedConditions(vr)
		sc.requeueReport = secondaryRequeue(csiAddonsDemotedRequeue, sc.interval)
		return local, nil
	}
	force := vr.Spec.ReplicationState == replicationv1alpha1.Resync || vr.Spec.AutoResync
	if local.NeedsResync && force {
		var err error
		if local, err = sc.img.update(func(st *state.ImageState) {
			st.NeedsResync = false
			// The local image is discarded and synced again from the primary.
			st.LastSyncTime = nil
		}); err != nil {
			return local, err
		}
	}
	switch r := resyncReadiness(local, peerUp, peer); r {
	case resyncReady:
		setInSyncConditions(vr)
	case resyncSplitBrain, resyncNoSync, resyncPeerUnavailable:
		setFailedResyncConditions(vr, r.message(sc.img))
		sc.requeueReport = secondaryRequeue(csiAddonsDemotedRequeue, sc.interval)
	default:
		setResyncingConditions(vr, r.message(sc.img))
		sc.requeueReport = secondaryRequeue(csiAddonsResyncRequeue, sc.interval)
	}
	return local, nil
}

// resyncReadiness is what ceph-csi's ResyncVolume answers for a secondary image
// (internal/csi-addons/rbd/replication.go): ready when both sites are up+unknown (the peer is
// demoted too and the last snapshot was exchanged); not ready while the image is up+replaying a
// live primary, which for a secondary of a live primary is always; an error otherwise: a
// split-brained image (up+error), one that has no synced snapshot of the current primary yet
// (up+syncing or starting, after a resync or a promotion on the peer), one whose peer is
// unreachable or demoted with writes still to send (up+error or up+stopped): its local status
// then carries no snapshot description, and checkVolumeResyncStatus fails.
type resyncState int

const (
	resyncReplaying resyncState = iota
	resyncReady
	resyncSplitBrain
	resyncNoSync
	resyncPeerUnavailable
)

func resyncReadiness(local state.ImageState, peerUp bool, peer state.ImageState) resyncState {
	switch {
	case local.NeedsResync:
		return resyncSplitBrain
	case peerUp && peer.Role == state.RoleSecondary && !peer.NeedsResync && !local.FinalMirrorPending && !peer.FinalMirrorPending && local.LastSyncTime != nil:
		return resyncReady
	case replaying(local, peerUp, peer):
		return resyncReplaying
	case local.LastSyncTime == nil || (peerUp && peer.Role == state.RolePrimary):
		return resyncNoSync
	}
	return resyncPeerUnavailable
}

func (r resyncState) message(img image) string {
	switch r {
	case resyncSplitBrain:
		return fmt.Sprintf("%s is split-brained (up+error): it diverged from the peer's primary; set autoResync or replicationState resync to discard its local changes", img)
	case resyncNoSync:
		return fmt.Sprintf("failed to get last sync info of %s: it has not received a snapshot of the peer's current primary yet", img)
	case resyncPeerUnavailable:
		return fmt.Sprintf("failed to get last sync info of %s: it replays no primary (its peer is unreachable, or demoted with writes it could not send yet)", img)
	}
	return fmt.Sprintf("%s is not ready: it replays the peer's primary (ceph-csi reports a secondary ready only when both sites are demoted and in sync)", img)
}

// finalMirror sends a demoted image's final mirror once the peer can take it (reachable, not
// primary, not waiting for a resync): the writes made while it was primary reach the peer before
// it may be promoted without loss. A peer promoted since with a newer epoch never gets it: this
// image then diverged from it and needs a resync.
func (s *store) finalMirror(img image, local state.ImageState, peerUp bool, peer state.ImageState) (state.ImageState, error) {
	switch {
	case peerUp && peer.Epoch > local.Epoch:
		return img.update(func(st *state.ImageState) { st.FinalMirrorPending, st.NeedsResync = false, true })
	case !peerUp || peer.Role == state.RolePrimary || peer.NeedsResync:
		return local, nil
	}
	if _, err := img.mirror(local.Epoch); err != nil {
		return state.ImageState{}, err
	}
	return img.update(func(st *state.ImageState) { st.FinalMirrorPending = false })
}

func setSyncStatus(vr *replicationv1alpha1.VolumeReplication, st state.ImageState) {
	if st.LastSyncTime == nil {
		vr.Status.LastSyncTime, vr.Status.LastSyncDuration, vr.Status.LastSyncBytes = nil, nil, nil
		return
	}
	bytes := st.LastSyncBytes
	vr.Status.LastSyncTime = &metav1.Time{Time: *st.LastSyncTime}
	vr.Status.LastSyncDuration = &metav1.Duration{Duration: st.LastSyncDuration}
	vr.Status.LastSyncBytes = &bytes
}

// patchStatusIfChanged patches the status of obj from before, and sends nothing when the patch
// is empty: a refresh that found nothing new (times compare as the API stores them, to the
// second) costs the API server no request. A real driver updates a status when it changes.
func patchStatusIfChanged(ctx context.Context, c client.Client, obj, before client.Object) error {
	patch := client.MergeFrom(before)
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(patch.Type(), data))
}
