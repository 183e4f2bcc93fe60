package storage

// The lab's csi-addons VolumeReplication semantics, modelled on RBD snapshot mirroring:
//
//   - primary: the local image is writable; every schedulingInterval of its
//     VolumeReplicationClass (parameter "schedulingInterval", a Go duration, default 1m) a
//     point-in-time copy is taken under the image lock and applied atomically on the peer's
//     image, which becomes a read-only secondary with the primary's epoch.
//   - promotion raises the image's epoch. It is refused while the peer is reachable and holds
//     the image as primary; while the peer is unreachable it succeeds (a force promotion).
//   - secondary: the image is read-only and receives the peer primary's mirror. Demoting a
//     primary first makes the image read-only and then, when the peer is reachable, sends a
//     final mirror, so a relocation carries every write. A primary demoted after its peer was
//     promoted with a newer epoch has diverged (a split brain): it needs a resync, which
//     autoResync or replicationState "resync" grants, and then the peer's next mirror replaces
//     its data.
//   - two reachable primaries never mirror; both report Degraded with reason SplitBrain.
//
// The storage of a stopped cluster runs no controller, so it neither sends nor receives; its
// peer sees it unreachable through the liveness lock.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
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

	volRepFinalizer = "lab.drover.io/volume-replication"

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

// Reasons of the lab's VolumeReplication conditions.
const (
	ReasonPromoted      = "Promoted"
	ReasonForcePromoted = "ForcePromoted"
	ReasonDemoted       = "Demoted"
	ReasonPeerIsPrimary = "PeerIsPrimary"
	ReasonSplitBrain    = "SplitBrain"
	ReasonNeedsResync   = "NeedsResync"
	// ReasonFinalMirrorPending: demoted, the final mirror not sent yet.
	ReasonFinalMirrorPending = "FinalMirrorPending"
	ReasonResyncing          = "Resyncing"
	ReasonPeerNeedsSync      = "PeerNeedsResync"
	ReasonPeerDown           = "PeerUnreachable"
	ReasonHealthy            = "Healthy"
	ReasonInvalid            = "Invalid"
	ReasonVolumeNotReady     = "VolumeNotReady"
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
	if controllerutil.AddFinalizer(vr, volRepFinalizer) {
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

// volRepPhase resolves the image and runs the asked operation, recording the outcome in the
// VolumeReplication's status.
func (s *store) volRepPhase(ctx context.Context, sc *volRepScope) (ctrl.Result, error) {
	handle, interval, problem, err := s.resolveImage(ctx, sc.vr)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != "" {
		sc.vr.Status.State = replicationv1alpha1.UnknownState
		sc.vr.Status.Message = problem
		setVRCondition(sc.vr, replicationv1alpha1.ConditionCompleted, false, ReasonVolumeNotReady, problem)
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
		setVRCondition(sc.vr, replicationv1alpha1.ConditionCompleted, false, ReasonInvalid, msg)
		return ctrl.Result{}, nil
	}
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
		d, perr := time.ParseDuration(raw)
		if perr != nil || d < minSchedulingInterval {
			return "", 0, fmt.Sprintf("VolumeReplicationClass %s: %s %q must be a duration of at least %s", class.Name, SchedulingIntervalParameter, raw, minSchedulingInterval), nil //nolint:nilerr // a bad parameter is the user's to fix; the status says so
		}
		interval = d
	}
	if vr.Spec.DataSource.Kind != "PersistentVolumeClaim" {
		return "", 0, fmt.Sprintf("dataSource kind %q is not supported; only PersistentVolumeClaim", vr.Spec.DataSource.Kind), nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: vr.Namespace, Name: vr.Spec.DataSource.Name}, pvc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return "", 0, fmt.Sprintf("PVC %s/%s not found", vr.Namespace, vr.Spec.DataSource.Name), nil
		}
		return "", 0, "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", 0, fmt.Sprintf("PVC %s/%s is not bound yet", pvc.Namespace, pvc.Name), nil
	}
	pv := &corev1.PersistentVolume{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", 0, "", fmt.Errorf("failed to get PV %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.CSI == nil || !s.ours(pv.Spec.CSI.Driver) || pv.Spec.CSI.Driver != class.Spec.Provisioner {
		return "", 0, fmt.Sprintf("PV %s is not a volume of VolumeReplicationClass %s's provisioner %s", pv.Name, class.Name, class.Spec.Provisioner), nil
	}
	return pv.Spec.CSI.VolumeHandle, interval, "", nil
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
		if peerUp && peer.Role == RolePrimary {
			msg := fmt.Sprintf("image %s is primary on the peer cluster: demote it there before promoting here", sc.handle)
			vr.Status.State = stateOf(local)
			vr.Status.Message = msg
			setVRCondition(vr, replicationv1alpha1.ConditionCompleted, false, ReasonPeerIsPrimary, msg)
			return ctrl.Result{RequeueAfter: volRepStatusRefresh}, nil
		}
		operation := ReasonPromoted
		if !peerUp {
			operation = ReasonForcePromoted
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
	setCompleted(vr, local)
	vr.Status.State = replicationv1alpha1.PrimaryState
	setVRCondition(vr, replicationv1alpha1.ConditionResyncing, false, ReasonHealthy, "")

	var requeue time.Duration
	switch {
	case !peerUp:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonPeerDown, "the peer cluster's storage is unreachable; mirroring resumes when it returns")
		requeue = volRepStatusRefresh
	case peer.Role == RolePrimary:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonSplitBrain,
			fmt.Sprintf("image %s is primary on both clusters (epochs %d here, %d on the peer): demote the stale one", sc.handle, local.Epoch, peer.Epoch))
		requeue = volRepStatusRefresh
	case peer.Epoch > local.Epoch:
		// The peer was promoted after this primary and then had its mirroring disabled (its
		// VolumeReplication deleted): its image is no replica to overwrite, as RBD mirroring
		// never overwrites an image that is not a mirror of this one. This primary is stale.
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonSplitBrain,
			fmt.Sprintf("image %s was promoted on the peer after this primary (epochs %d here, %d on the peer) and is no longer mirrored there: this primary is stale, demote it", sc.handle, local.Epoch, peer.Epoch))
		requeue = volRepStatusRefresh
	case peer.NeedsResync:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonPeerNeedsSync, "the peer's image diverged and waits for a resync before it receives mirrors")
		requeue = volRepStatusRefresh
	default:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, false, ReasonHealthy, "")
		if due := nextMirror(local, sc.interval); !due.After(sc.now) {
			if local, err = s.mirror(sc.handle, local.Epoch); err != nil {
				return ctrl.Result{}, err
			}
		}
		requeue = max(time.Until(nextMirror(local, sc.interval)), 100*time.Millisecond)
	}
	vr.Status.Message = ""
	setSyncStatus(vr, local)
	return ctrl.Result{RequeueAfter: min(requeue, sc.interval)}, nil
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
			st.Operation, st.OperationTime = ReasonDemoted, &sc.now
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
	setCompleted(vr, local)
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
	switch {
	case local.NeedsResync:
		msg := "the image diverged from the peer's primary (split brain): set replicationState to resync or autoResync to discard local changes"
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonNeedsResync, msg)
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, false, ReasonNeedsResync, msg)
	case local.FinalMirrorPending:
		msg := "demoted, but the final mirror of the writes made as primary has not reached the peer yet (the peer is unreachable or not ready): it is sent when the peer can take it"
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, true, ReasonFinalMirrorPending, msg)
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, false, ReasonFinalMirrorPending, msg)
	case local.LastSyncTime == nil:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, false, ReasonHealthy, "")
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, true, ReasonResyncing, "waiting for the first mirror from the primary")
	default:
		setVRCondition(vr, replicationv1alpha1.ConditionDegraded, false, ReasonHealthy, "")
		setVRCondition(vr, replicationv1alpha1.ConditionResyncing, false, ReasonHealthy, "")
	}
	if vr.Spec.ReplicationState == replicationv1alpha1.Resync && !local.NeedsResync {
		setVRCondition(vr, replicationv1alpha1.ConditionCompleted, true, ReasonResyncing, "resync granted: the peer primary's next mirror replaces the local data")
	}
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

// deleteVolRep disables mirroring of the image: a primary becomes an ordinary writable
// volume; a secondary stays read-only until a VolumeReplication promotes it.
func (s *store) deleteVolRep(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	if !controllerutil.ContainsFinalizer(vr, volRepFinalizer) {
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
	controllerutil.RemoveFinalizer(vr, volRepFinalizer)
	if err := s.client.Update(ctx, vr); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// setCompleted derives the Completed condition from the image's last role change, at every
// reconcile, so it survives a status written from a stale cache.
func setCompleted(vr *replicationv1alpha1.VolumeReplication, st ImageState) {
	messages := map[string]string{
		ReasonPromoted:      "image promoted to primary",
		ReasonForcePromoted: "image force-promoted to primary: the peer cluster was unreachable",
		ReasonDemoted:       "image demoted to secondary",
	}
	reason := st.Operation
	if _, ok := messages[reason]; !ok {
		reason = ReasonPromoted
		if st.Role == RoleSecondary {
			reason = ReasonDemoted
		}
	}
	setVRCondition(vr, replicationv1alpha1.ConditionCompleted, true, reason, messages[reason])
	if st.OperationTime != nil {
		vr.Status.LastCompletionTime = &metav1.Time{Time: *st.OperationTime}
	}
}

func stateOf(st ImageState) replicationv1alpha1.State {
	switch st.Role {
	case RolePrimary:
		return replicationv1alpha1.PrimaryState
	case RoleSecondary:
		return replicationv1alpha1.SecondaryState
	default:
		return replicationv1alpha1.UnknownState
	}
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

func setVRCondition(vr *replicationv1alpha1.VolumeReplication, condType string, status bool, reason, msg string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&vr.Status.Conditions, metav1.Condition{
		Type: condType, Status: s, Reason: reason, Message: msg, ObservedGeneration: vr.Generation,
	})
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
