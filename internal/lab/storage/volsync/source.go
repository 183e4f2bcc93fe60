package volsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// AnnotationHoldSync is the annotation that, set to "true" on a ReplicationSource, holds its running sync: the
// transfer is made and applied, but the source does not record the sync as completed (as a
// mover still transferring) until the annotation is removed. Tests use it to keep a sync in
// flight while something else happens, such as a workload stopping or a trigger changing.
const AnnotationHoldSync = "lab.drover.io/hold-sync"

// AnnotationFailMover is the annotation that, set on a ReplicationSource, makes its mover fail with the annotation's
// value as its log, as a source volume that cannot be read would: the sync stays running and is
// retried, status.latestMoverStatus reports the failure.
const AnnotationFailMover = "lab.drover.io/fail-mover"

// rsScope is the state of one reconcile of a ReplicationSource.
type rsScope struct {
	rs      *volsyncv1alpha1.ReplicationSource
	base    *volsyncv1alpha1.ReplicationSource
	address string
	// exported: address was reached through the peer's ServiceExport (a clusterset address).
	exported bool
	keyName  string
	psk      string
	schedule cron.Schedule
	// manual is spec.trigger.manual when the sync sent in this pass started (send records it in
	// the transfer; completion records the trigger current then, not this one).
	manual string
	// started: the sync was started in this pass, so no earlier pass can have sent it.
	started bool
	// collected are acknowledged transfers, removed once the status that records them is stored.
	collected []string
}

func (s *store) reconcileSource(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	if err := s.Client.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rs.Spec.RsyncTLS == nil || rs.DeletionTimestamp != nil || rs.Spec.Paused {
		return ctrl.Result{}, nil
	}
	sc := &rsScope{rs: rs, base: rs.DeepCopy()}
	if rs.Status == nil {
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{}
	}
	res, err := runVolSyncPhases(ctx, sc,
		s.validateSource, s.checkPeer, s.collectTransfer, s.awaitTrigger, s.confirmRunning, s.takeSourceCopy, s.handshake, s.startSourceMover, s.runMover)
	res, err = settleVolSync(res, err, &rs.Status.Conditions, rs.Generation)
	if !equality.Semantic.DeepEqual(sc.base.Status, rs.Status) {
		if perr := s.Client.Status().Patch(ctx, rs, client.MergeFrom(sc.base)); perr != nil {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("failed to patch status of ReplicationSource %s: %w", klog.KObj(rs), perr))
		}
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, dir := range sc.collected {
		if err := os.RemoveAll(dir); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to remove transfer %s: %w", filepath.Base(dir), err)
		}
	}
	return res, nil
}

// validateSource refuses a spec that cannot work, saying what to change.
func (s *store) validateSource(_ context.Context, sc *rsScope) (ctrl.Result, error) {
	rs, spec := sc.rs, sc.rs.Spec.RsyncTLS
	var problems []string
	if rs.Spec.SourcePVC == "" {
		problems = append(problems, "spec.sourcePVC is empty: name the PVC to replicate")
	}
	sc.address = ptr.Deref(spec.Address, "")
	if sc.address == "" {
		problems = append(problems, "spec.rsyncTLS.address is empty: set it to the destination's status.rsyncTLS.address")
	} else if err := validAddress(sc.address); err != nil {
		problems = append(problems, err.Error())
	}
	sc.keyName = ptr.Deref(spec.KeySecret, "")
	if sc.keyName == "" {
		problems = append(problems,
			"spec.rsyncTLS.keySecret is empty: copy the destination's key Secret into this namespace and name it here")
	}
	if t := rs.Spec.Trigger; t != nil && t.Manual == "" && t.Schedule != nil {
		schedule, err := cron.ParseStandard(*t.Schedule)
		if err != nil {
			problems = append(problems, fmt.Sprintf("spec.trigger.schedule %q is not a cron schedule: %v", *t.Schedule, err))
		}
		sc.schedule = schedule
	}
	if len(problems) > 0 {
		return ctrl.Result{}, reconcile.TerminalError(errors.New(strings.Join(problems, "; ")))
	}
	rs.Status.RsyncTLS = &volsyncv1alpha1.ReplicationSourceRsyncTLSStatus{KeySecret: ptr.To(sc.keyName)}
	return ctrl.Result{}, nil
}

// checkPeer stops while the peer's storage is down: nothing can be sent or acknowledged. It
// resolves a clusterset address to the exported destination's (serviceexport.go).
func (s *store) checkPeer(_ context.Context, sc *rsScope) (ctrl.Result, error) {
	if !s.Images.PeerReachable() {
		return ctrl.Result{}, driver.WaitFor(volsyncRetry,
			"The peer cluster's storage is unreachable (is the cluster stopped?): the sync waits until it returns")
	}
	address, exported, err := s.resolve(sc.address)
	if err != nil {
		return ctrl.Result{}, err
	}
	sc.address, sc.exported = address, exported
	return ctrl.Result{}, nil
}

// collectTransfer observes this source's transfer at the destination: acknowledged (the sync
// completes), in flight (wait), or torn by a stop (remove it).
func (s *store) collectTransfer(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	dirs, err := filepath.Glob(filepath.Join(incomingPath(s.Opts.PeerDataDir, sc.address), string(rs.UID)+"-*"))
	if err != nil {
		return ctrl.Result{}, err
	}
	var refused error
	for _, dir := range dirs {
		var t transfer
		var a ack
		sent := driver.ReadJSON(filepath.Join(dir, transferFile), &t) == nil
		acked := sent && driver.ReadJSON(filepath.Join(dir, ackFile), &a) == nil
		switch {
		case !sent:
			// Only this reconcile copies for this source, so a copy without its transfer.json was
			// torn by a stop of this storage.
			if err := os.RemoveAll(dir); err != nil {
				return ctrl.Result{}, fmt.Errorf("failed to remove torn transfer %s: %w", filepath.Base(dir), err)
			}
		case !acked:
			setSynchronizing(&rs.Status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
				fmt.Sprintf("Sent %d bytes to %s: waiting for the destination to apply them", t.Bytes, sc.address))
			return ctrl.Result{RequeueAfter: volsyncPoll}, nil
		case a.Error != "":
			// The sync keeps running (lastSyncStartTime stays): it is sent again after volsyncRetry.
			sc.collected = append(sc.collected, dir)
			refused = driver.WaitFor(volsyncRetry, "The destination refused the transfer: %s", a.Error)
		case rs.Annotations[AnnotationHoldSync] == "true":
			setSynchronizing(&rs.Status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
				fmt.Sprintf("Sent %d bytes to %s: the sync is held by annotation %s", t.Bytes, sc.address, AnnotationHoldSync))
			return ctrl.Result{RequeueAfter: volsyncPoll}, nil
		default:
			sc.collected = append(sc.collected, dir)
			if started := rs.Status.LastSyncStartTime; started != nil {
				cp := copyPath(s.Opts.DataDir, rs.UID, started.Time)
				sc.collected = append(sc.collected, cp, cp+".json")
			}
			completeSync(rs, sc.schedule, t.StartTime, time.Now())
			ctrl.LoggerFrom(ctx).Info("Synchronized volume", "bytes", t.Bytes, "acknowledged", a.Time,
				"duration", rs.Status.LastSyncDuration.Duration, "lastManualSync", rs.Status.LastManualSync)
		}
	}
	return ctrl.Result{}, refused
}

// completeSync records a completed sync as VolSync's state machine does when it leaves the
// Synchronizing state (backube/volsync internal/controller/statemachine/machine.go,
// transitionToCleaningUp): lastSyncTime is now, lastSyncDuration runs from lastSyncStartTime
// (sent, the transfer's start, when the status that started it was not stored), nextSyncTime
// follows the schedule from now, lastManualSync becomes spec.trigger.manual as it is NOW (not
// the trigger current when the sync started: a trigger changed while a sync runs is satisfied
// by that sync), and lastSyncStartTime is cleared.
func completeSync(rs *volsyncv1alpha1.ReplicationSource, schedule cron.Schedule, sent, now time.Time) {
	st := rs.Status
	start := sent
	if st.LastSyncStartTime != nil {
		start = st.LastSyncStartTime.Time
	}
	st.LastSyncTime = statusTime(now)
	st.LastSyncDuration = &metav1.Duration{Duration: now.Sub(start)}
	st.NextSyncTime = nil
	if schedule != nil {
		st.NextSyncTime = statusTime(schedule.Next(now))
	}
	st.LastManualSync = manualTrigger(rs.Spec.Trigger)
	st.LastSyncStartTime = nil
	st.LatestMoverStatus = &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultSuccessful}
}

// runMover runs the mover (send) as VolSync runs its mover Job: a failure is retried while the
// sync stays running (Synchronizing True, SyncInProgress: reason Error is VolSync's for its own
// reconcile errors only) and status.latestMoverStatus says Failed with the log's tail
// (backube/volsync internal/controller/utils/podlogs.go, UpdateMoverStatusFailed).
// Preconditions the source waits for (a PVC not bound yet) are not mover failures.
func (s *store) runMover(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	if logs := sc.rs.Annotations[AnnotationFailMover]; logs != "" {
		return moverFailed(sc, logs), nil
	}
	res, err := s.send(ctx, sc)
	var wait *driver.WaitError
	if err != nil && !errors.As(err, &wait) {
		return moverFailed(sc, err.Error()), nil
	}
	return res, err
}

// moverFailed records a failed mover run, retried after volsyncRetry.
func moverFailed(sc *rsScope, logs string) ctrl.Result {
	rs := sc.rs
	rs.Status.LatestMoverStatus = &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultFailed, Logs: logs}
	setSynchronizing(&rs.Status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		"Synchronization in progress")
	return ctrl.Result{RequeueAfter: volsyncRetry}
}

// awaitTrigger is VolSync's state machine outside a running sync (machine.go, shouldSync): a
// source that never synced syncs at once; then a sync is due when spec.trigger.manual differs
// from status.lastManualSync (manual wins over a schedule), at the schedule's next time after
// the last completion, or, without a trigger, at once (continuous mode). A due sync starts by
// setting lastSyncStartTime. While lastSyncStartTime is set a sync runs, and it runs to its
// completion whatever the trigger says meanwhile.
func (s *store) awaitTrigger(_ context.Context, sc *rsScope) (ctrl.Result, error) {
	rs, st := sc.rs, sc.rs.Status
	sc.manual = manualTrigger(rs.Spec.Trigger)
	if st.LastSyncStartTime != nil {
		return ctrl.Result{}, nil
	}
	if st.LastSyncTime != nil {
		switch t := rs.Spec.Trigger; {
		case t != nil && t.Manual != "":
			st.NextSyncTime = nil
			if t.Manual == st.LastManualSync {
				setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonManual,
					"Synchronized: waiting for a new spec.trigger.manual")
				return ctrl.Result{RequeueAfter: volsyncIdle}, nil
			}
		case sc.schedule != nil:
			next := sc.schedule.Next(st.LastSyncTime.Time)
			st.NextSyncTime = statusTime(next)
			if wait := time.Until(next); wait > 0 {
				setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonSched,
					"Waiting for the next scheduled synchronization")
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		default:
			st.NextSyncTime = nil
		}
	}
	st.LastSyncStartTime = statusTime(time.Now())
	sc.started = true
	setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		"Synchronization in progress")
	return ctrl.Result{}, nil
}

// confirmRunning checks, before a sync that an earlier pass started is sent, that the API
// server still says it runs: right after a completion the cache may still show the sync that
// just completed as running, and sending it again would be a sync that nothing asked for.
func (s *store) confirmRunning(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	if sc.started || s.Reader == nil {
		return ctrl.Result{}, nil
	}
	live := &volsyncv1alpha1.ReplicationSource{}
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(sc.rs), live); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if live.Status == nil || !equality.Semantic.DeepEqual(live.Status.LastSyncStartTime, sc.base.Status.LastSyncStartTime) ||
		!equality.Semantic.DeepEqual(live.Status.LastSyncTime, sc.base.Status.LastSyncTime) {
		sc.rs.Status = sc.base.Status.DeepCopy()
		return ctrl.Result{RequeueAfter: volsyncPoll}, nil
	}
	return ctrl.Result{}, nil
}

// handshake stands for stunnel's TLS-PSK handshake: a destination must listen at the address
// and accept the source's key, or nothing is sent.
func (s *store) handshake(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	secret := &corev1.Secret{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: sc.keyName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, driver.WaitFor(volsyncRetry,
				"Key Secret %s does not exist: copy the destination's key Secret (its status.rsyncTLS.keySecret) into namespace %s",
				sc.keyName, rs.Namespace)
		}
		return ctrl.Result{}, err
	}
	sc.psk = strings.TrimSpace(string(secret.Data[pskKey]))
	if sc.psk == "" {
		return ctrl.Result{}, driver.WaitFor(volsyncRetry, "Key Secret %s has no %s key", sc.keyName, pskKey)
	}
	var l listener
	if err := driver.ReadJSON(listenerPath(s.Opts.PeerDataDir, sc.address), &l); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ctrl.Result{}, driver.WaitFor(volsyncRetry,
				"No ReplicationDestination listens at %s on the peer cluster: check spec.rsyncTLS.address", sc.address)
		}
		return ctrl.Result{}, err
	}
	if err := s.unreachable(l, sc.address, sc.exported); err != nil {
		return ctrl.Result{}, err
	}
	if l.PSK != sc.psk {
		return ctrl.Result{}, driver.WaitFor(volsyncRetry,
			"The destination at %s refused the key in Secret %s (TLS-PSK handshake failed): copy the destination's key Secret",
			sc.address, sc.keyName)
	}
	return ctrl.Result{}, nil
}
