package storage

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
)

// rsScope is the state of one reconcile of a ReplicationSource.
type rsScope struct {
	rs       *volsyncv1alpha1.ReplicationSource
	base     *volsyncv1alpha1.ReplicationSource
	address  string
	keyName  string
	psk      string
	schedule cron.Schedule
	// manual is the manual trigger the sync started in this pass serves.
	manual string
	// collected are acknowledged transfers, removed once the status that records them is stored.
	collected []string
}

func (s *store) reconcileSource(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	if err := s.client.Get(ctx, req.NamespacedName, rs); err != nil {
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
		s.validateSource, s.checkPeer, s.collectTransfer, s.awaitTrigger, s.handshake, s.send)
	res, err = settleVolSync(res, err, &rs.Status.Conditions, rs.Generation)
	if !equality.Semantic.DeepEqual(sc.base.Status, rs.Status) {
		if perr := s.client.Status().Patch(ctx, rs, client.MergeFrom(sc.base)); perr != nil {
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

// checkPeer stops while the peer's storage is down: nothing can be sent or acknowledged.
func (s *store) checkPeer(context.Context, *rsScope) (ctrl.Result, error) {
	if !s.images.PeerReachable() {
		return ctrl.Result{}, waitFor(volsyncRetry,
			"The peer cluster's storage is unreachable (is the cluster stopped?): the sync waits until it returns")
	}
	return ctrl.Result{}, nil
}

// collectTransfer observes this source's transfer at the destination: acknowledged (record
// it), in flight (wait), or torn by a stop (remove it).
func (s *store) collectTransfer(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	dirs, err := filepath.Glob(filepath.Join(incomingPath(s.opts.PeerDataDir, sc.address), string(rs.UID)+"-*"))
	if err != nil {
		return ctrl.Result{}, err
	}
	var refused error
	for _, dir := range dirs {
		var t transfer
		var a ack
		sent := readJSON(filepath.Join(dir, transferFile), &t) == nil
		acked := sent && readJSON(filepath.Join(dir, ackFile), &a) == nil
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
			sc.collected = append(sc.collected, dir)
			refused = waitFor(volsyncRetry, "The destination refused the transfer: %s", a.Error)
		default:
			sc.collected = append(sc.collected, dir)
			recordSync(rs.Status, t, a)
			ctrl.LoggerFrom(ctx).Info("Synchronized volume", "bytes", t.Bytes, "image", a.Image,
				"duration", rs.Status.LastSyncDuration.Duration)
		}
	}
	return ctrl.Result{}, refused
}

func recordSync(st *volsyncv1alpha1.ReplicationSourceStatus, t transfer, a ack) {
	st.LastSyncStartTime = statusTime(t.StartTime)
	st.LastSyncTime = statusTime(a.Time)
	st.LastSyncDuration = &metav1.Duration{Duration: a.Time.Sub(t.StartTime).Round(time.Millisecond)}
	if t.Manual != "" {
		st.LastManualSync = t.Manual
	}
}

// awaitTrigger decides whether a sync is due: a new manual trigger, a schedule's time, or
// always without a trigger.
func (s *store) awaitTrigger(_ context.Context, sc *rsScope) (ctrl.Result, error) {
	rs, st := sc.rs, sc.rs.Status
	switch t := rs.Spec.Trigger; {
	case t != nil && t.Manual != "":
		st.NextSyncTime = nil
		if t.Manual == st.LastManualSync {
			setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonManual,
				"Synchronized: waiting for a new spec.trigger.manual")
			return ctrl.Result{RequeueAfter: volsyncIdle}, nil
		}
		sc.manual = t.Manual
	case sc.schedule != nil:
		if st.LastSyncStartTime == nil {
			break
		}
		next := sc.schedule.Next(st.LastSyncStartTime.Time)
		if wait := time.Until(next); wait > 0 {
			st.NextSyncTime = statusTime(next)
			setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonSched,
				"Waiting for the next scheduled synchronization")
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	default:
		st.NextSyncTime = nil
	}
	return ctrl.Result{}, nil
}

// handshake stands for stunnel's TLS-PSK handshake: a destination must listen at the address
// and accept the source's key, or nothing is sent.
func (s *store) handshake(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	secret := &corev1.Secret{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: sc.keyName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, waitFor(volsyncRetry,
				"Key Secret %s does not exist: copy the destination's key Secret (its status.rsyncTLS.keySecret) into namespace %s",
				sc.keyName, rs.Namespace)
		}
		return ctrl.Result{}, err
	}
	sc.psk = strings.TrimSpace(string(secret.Data[pskKey]))
	if sc.psk == "" {
		return ctrl.Result{}, waitFor(volsyncRetry, "Key Secret %s has no %s key", sc.keyName, pskKey)
	}
	var l listener
	if err := readJSON(listenerPath(s.opts.PeerDataDir, sc.address), &l); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ctrl.Result{}, waitFor(volsyncRetry,
				"No ReplicationDestination listens at %s on the peer cluster: check spec.rsyncTLS.address", sc.address)
		}
		return ctrl.Result{}, err
	}
	if l.PSK != sc.psk {
		return ctrl.Result{}, waitFor(volsyncRetry,
			"The destination at %s refused the key in Secret %s (TLS-PSK handshake failed): copy the destination's key Secret",
			sc.address, sc.keyName)
	}
	return ctrl.Result{}, nil
}
