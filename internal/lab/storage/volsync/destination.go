package volsync

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// rdScope is the state of one reconcile of a ReplicationDestination.
type rdScope struct {
	rd      *volsyncv1alpha1.ReplicationDestination
	base    *volsyncv1alpha1.ReplicationDestination
	address string
	reach   string
	pvcName string
	keyName string
	psk     string
	// volume is the handle of the destination PVC's volume; empty while it is not bound.
	volume string
	// moverClosed says why the mover's pod does not run (mover.go); empty once it runs.
	moverClosed string
	// moverRefuses is what a source's rsync prints when the running mover's daemon fails every
	// connection (identity.go); empty when it accepts them.
	moverRefuses string
	// received: the receive phase ran, so the snapshots marked for cleanup may be deleted.
	received bool
	// snapname is the snapshot of the sync whose mover completed (the destination PVC's
	// volsync.backube/snapname), empty while no image is being taken; moverDone is when that
	// mover completed.
	snapname  string
	moverDone time.Time
	// imageDone: this pass recorded snapname as the latest image; the clean-up follows once
	// the status is stored.
	imageDone bool
	// acks are written once the status that records them is stored.
	acks []pendingAck
}

type pendingAck struct {
	dir string
	ack ack
}

func (s *store) reconcileDestination(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := s.Client.Get(ctx, req.NamespacedName, rd); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, s.forgetDestination(req.Namespace, req.Name, "")
		}
		return ctrl.Result{}, err
	}
	if rd.Spec.RsyncTLS == nil {
		return ctrl.Result{}, s.forgetDestination(req.Namespace, req.Name, "")
	}
	if rd.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	sc := &rdScope{rd: rd, base: rd.DeepCopy()}
	sc.address, sc.reach = destinationAddress(rd)
	if err := s.readPendingImage(sc); err != nil {
		return ctrl.Result{}, err
	}
	if rd.Status == nil {
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{}
	}
	res, err := runVolSyncPhases(ctx, sc,
		s.relinquishSnapshots, s.ensureDestinationPVC, s.ensureDestinationKey, s.ensureDestinationMover, s.publishListener, s.receive)
	res, err = settleVolSync(res, err, &rd.Status.Conditions, rd.Generation)
	if perr := s.patchDestinationStatus(ctx, sc); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := s.afterDestinationStatus(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// ensureDestinationPVC finds the PVC named by the spec or creates VolSync's volsync-<rd>-dst.
func (s *store) ensureDestinationPVC(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd, spec := sc.rd, sc.rd.Spec.RsyncTLS
	pvc := &corev1.PersistentVolumeClaim{}
	if spec.DestinationPVC != nil {
		sc.pvcName = *spec.DestinationPVC
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.pvcName}, pvc)
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, driver.WaitFor(volsyncRetry,
				"Destination PVC %s does not exist: create it or unset spec.rsyncTLS.destinationPVC", sc.pvcName)
		}
		return ctrl.Result{}, err
	}
	sc.pvcName = "volsync-" + rd.Name + "-dst"
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.pvcName}, pvc)
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if spec.Capacity == nil || len(spec.AccessModes) == 0 {
		return ctrl.Result{}, reconcile.TerminalError(errors.New(
			"spec.rsyncTLS needs capacity and accessModes to create the destination PVC, or destinationPVC to name one"))
	}
	pvc = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: sc.pvcName},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      spec.AccessModes,
			StorageClassName: spec.StorageClassName,
			VolumeMode:       spec.VolumeMode,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *spec.Capacity},
			},
		},
	}
	if err := controllerutil.SetControllerReference(rd, pvc, s.Client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if err := s.Client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, createFailed(err, "destination PVC", pvc)
	}
	ctrl.LoggerFrom(ctx).Info("Created destination PVC", "pvc", klog.KObj(pvc))
	return ctrl.Result{}, nil
}

// pendingImage is the lab's record of a sync whose mover completed and whose image is not
// recorded yet (upstream keeps the snapshot's name in the annotation volsync.backube/snapname of
// the destination PVC; the lab keeps it in a file, which every pass reads without a cache lag).
type pendingImage struct {
	Snapshot  string    `json:"snapshot"`
	MoverDone time.Time `json:"moverDone"`
}

func pendingImagePath(dataDir string, uid types.UID) string {
	return filepath.Join(dataDir, "volsync", "pending", string(uid)+".json")
}

// readPendingImage reads the image being taken, if any.
func (s *store) readPendingImage(sc *rdScope) error {
	var p pendingImage
	err := driver.ReadJSON(pendingImagePath(s.Opts.DataDir, sc.rd.UID), &p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	sc.snapname, sc.moverDone = p.Snapshot, p.MoverDone
	return err
}

// ensureDestinationKey finds the key Secret named by the spec or creates
// volsync-rsync-tls-<rd> with a random key.
func (s *store) ensureDestinationKey(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd, spec := sc.rd, sc.rd.Spec.RsyncTLS
	sc.keyName = ptr.Deref(spec.KeySecret, "volsync-rsync-tls-"+rd.Name)
	secret := &corev1.Secret{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.keyName}, secret)
	switch {
	case apierrors.IsNotFound(err) && spec.KeySecret != nil:
		return ctrl.Result{}, driver.WaitFor(volsyncRetry,
			"Key Secret %s does not exist: create it with a %s key or unset spec.rsyncTLS.keySecret", sc.keyName, pskKey)
	case apierrors.IsNotFound(err):
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return ctrl.Result{}, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: sc.keyName},
			Data:       map[string][]byte{pskKey: []byte(pskIdentity + ":" + hex.EncodeToString(key))},
		}
		if err := controllerutil.SetControllerReference(rd, secret, s.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		err := s.Client.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			// Created by an earlier pass that the cache has not seen yet: the next pass reads it.
			return ctrl.Result{RequeueAfter: volsyncPoll}, nil
		}
		if err != nil {
			return ctrl.Result{}, createFailed(err, "key Secret", secret)
		}
		ctrl.LoggerFrom(ctx).Info("Created key Secret", "secret", klog.KObj(secret))
	case err != nil:
		return ctrl.Result{}, err
	}
	sc.psk = strings.TrimSpace(string(secret.Data[pskKey]))
	if sc.psk == "" {
		return ctrl.Result{}, driver.WaitFor(volsyncRetry, "Key Secret %s has no %s key", sc.keyName, pskKey)
	}
	return ctrl.Result{}, nil
}

// publishListener makes the destination reachable: the listener file for sources on the peer
// (with the volume its mover has mounted, once the PVC is bound), the address and key Secret in
// the status.
func (s *store) publishListener(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	if err := s.forgetDestination(rd.Namespace, rd.Name, sc.address); err != nil {
		return ctrl.Result{}, err
	}
	rd.Status.RsyncTLS = &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{
		Address: ptr.To(sc.address), Port: ptr.To(rsyncTLSPort), KeySecret: ptr.To(sc.keyName),
	}
	pv, bindErr := s.BoundVolume(ctx, rd.Namespace, sc.pvcName)
	if bindErr == nil {
		sc.volume = pv.Spec.CSI.VolumeHandle
	}
	return ctrl.Result{}, errors.Join(s.writeListener(sc), bindErr)
}

// writeListener writes the destination's listener unless it is up to date.
func (s *store) writeListener(sc *rdScope) error {
	rd := sc.rd
	closed := closedReason(rd)
	if closed == "" && sc.snapname != "" {
		closed = "its mover finished; the image of the sync is being taken"
	}
	if closed == "" {
		closed = sc.moverClosed
	}
	want := listener{Namespace: rd.Namespace, Name: rd.Name, UID: rd.UID, PSK: sc.psk, Volume: sc.volume, Closed: closed,
		Cluster: s.Opts.Cluster, Reach: sc.reach, Refuses: sc.moverRefuses}
	path := listenerPath(s.Opts.DataDir, sc.address)
	var have listener
	if err := driver.ReadJSON(path, &have); err == nil && have == want {
		return nil
	}
	return driver.WriteJSON(path, want)
}

// closedReason says why no mover of the destination runs to accept a connection, or "".
func closedReason(rd *volsyncv1alpha1.ReplicationDestination) string {
	switch manual := manualTrigger(rd.Spec.Trigger); {
	case rd.Spec.Paused:
		return "spec.paused is set"
	case manual != "" && rd.Status != nil && manual == rd.Status.LastManualSync:
		return fmt.Sprintf("its spec.trigger.manual %q was served: change it to receive again", manual)
	}
	return ""
}

// receive runs the destination's mover and its image, as VolSync's rsync-tls destination does
// (backube/volsync internal/controller/mover/rsynctls/mover.go, Synchronize;
// volumehandler/volumehandler.go, ensureImageSnapshot; statemachine/machine.go): the mover Job
// ends when the source's "complete" control file arrives, and the source's own Job ends a few
// seconds later, so the source records its sync before the destination has an image of it.
// Only then does the destination name a snapshot (pendingImage), create it, wait until it is
// bound, and record it as status.latestImage with the
// sync's completion (the source's next sync finds no mover until then). A destination with a
// snapshot named finishes it even while paused: pause
// only stops mover Jobs, and this one has already succeeded.
func (s *store) receive(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	if sc.snapname != "" {
		return s.finishImage(ctx, sc)
	}
	if rd.Spec.Paused {
		return ctrl.Result{RequeueAfter: volsyncIdle}, nil
	}
	sc.received = true
	startDestinationSync(rd)
	t, dir, refused, err := nextTransfer(incomingPath(s.Opts.DataDir, sc.address))
	if err != nil {
		return ctrl.Result{}, err
	}
	poll := ctrl.Result{RequeueAfter: volsyncPoll}
	if t == nil {
		// The refusal is read from the transfers' answers on disk, not from the status a
		// stale cache may hold: a pass that reads an older status would report "Listening"
		// over the refusal, which is then never reported again.
		if refused != "" {
			setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonError, refused)
		} else if !lastTransferRefused(rd.Status.Conditions) {
			s.setListening(sc)
		}
		return poll, nil
	}
	manual := manualTrigger(rd.Spec.Trigger)
	if manual != "" && manual == rd.Status.LastManualSync {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonManual,
			"A transfer is waiting: change spec.trigger.manual to accept it")
		return poll, nil
	}
	if t.PSK != sc.psk {
		msg := fmt.Sprintf("%s %s: its key does not match Secret %s", refusedPrefix, t.Source, sc.keyName)
		sc.acks = append(sc.acks, pendingAck{dir: dir, ack: ack{Error: msg, Time: time.Now()}})
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonError, msg)
		return poll, nil
	}
	return s.moverCompleted(ctx, sc, t, dir)
}

// moverCompleted ends the mover of an accepted transfer: the source wrote its data into the
// volume before its control file, so the volume holds the complete sync now, and keeps it, as
// no mover runs until the image is taken. The snapshot's name goes on the PVC first (a restart
// finds it there), then the source hears of the completion (ack.json, once the status is
// stored), and the listener closes until the next sync's mover runs.
func (s *store) moverCompleted(ctx context.Context, sc *rdScope, t *transfer, dir string) (ctrl.Result, error) {
	rd := sc.rd
	name := snapshotNameFor(rd.Name, filepath.Base(dir), t.StartTime)
	path := pendingImagePath(s.Opts.DataDir, rd.UID)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to record the pending image: %w", err)
	}
	if err := driver.WriteJSON(path, pendingImage{Snapshot: name, MoverDone: time.Now()}); err != nil {
		return ctrl.Result{}, err
	}
	sc.snapname, sc.moverDone = name, time.Now()
	sc.moverClosed = "its mover finished; the image of the sync is being taken"
	sc.acks = append(sc.acks, pendingAck{dir: dir, ack: ack{Time: time.Now()}})
	setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		fmt.Sprintf("Received %d bytes from %s; taking snapshot %s", t.Bytes, t.Source, name))
	ctrl.LoggerFrom(ctx).Info("Mover completed", "source", t.Source, "bytes", t.Bytes, "snapshot", name)
	return ctrl.Result{RequeueAfter: volsyncPoll}, nil
}

// finishImage takes the image of the sync whose mover completed, after the destination's image
// delay (ImageDelayAnnotation) and never while HoldImageAnnotation holds it, and records it
// once its snapshot is bound (upstream records a bound snapshot, ready to use or not).
func (s *store) finishImage(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	if rd.Status.LatestImage != nil && rd.Status.LatestImage.Name == sc.snapname {
		// Recorded: the clean-up runs once the destination's clean-up delay has passed.
		if wait := cleanupDelay(rd) - time.Since(rd.Status.LastSyncTime.Time); wait > 0 {
			return ctrl.Result{RequeueAfter: min(wait, volsyncPoll)}, nil
		}
		sc.imageDone = true
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("The mover finished; taking snapshot %s", sc.snapname)
	if rd.Annotations[HoldImageAnnotation] == "true" {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
			msg+": held by annotation "+HoldImageAnnotation)
		return ctrl.Result{RequeueAfter: volsyncPoll}, nil
	}
	if wait := imageDelay(rd) - time.Since(sc.moverDone); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, volsyncPoll)}, nil
	}
	image, err := s.ensureLatestImage(ctx, sc)
	if err != nil || image == nil {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync, msg)
		return ctrl.Result{RequeueAfter: volsyncPoll}, err
	}
	if err := s.markOldImage(ctx, rd, image); err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	st := rd.Status
	st.LatestImage = image
	st.LastSyncTime = statusTime(now)
	if st.LastSyncStartTime != nil {
		st.LastSyncDuration = &metav1.Duration{Duration: now.Sub(st.LastSyncStartTime.Time).Round(time.Millisecond)}
	}
	st.LastSyncStartTime = nil
	st.LastManualSync = manualTrigger(rd.Spec.Trigger)
	sc.imageDone = cleanupDelay(rd) == 0
	ctrl.LoggerFrom(ctx).Info("Recorded the image of a sync", "image", image.Name)
	return ctrl.Result{RequeueAfter: volsyncPoll}, nil
}

// startDestinationSync starts the destination's next sync as VolSync's state machine does after
// a clean-up (machine.go, shouldSync): at once without a trigger (continuous mode, so a sync
// almost always runs and lastSyncStartTime is later than lastSyncTime), or when
// spec.trigger.manual differs from status.lastManualSync. The destination side ignores a
// schedule in the lab (its mover only waits for the source).
func startDestinationSync(rd *volsyncv1alpha1.ReplicationDestination) {
	st := rd.Status
	if st.LastSyncStartTime != nil {
		return
	}
	if manual := manualTrigger(rd.Spec.Trigger); manual != "" && manual == st.LastManualSync && st.LastSyncTime != nil {
		return
	}
	st.LastSyncStartTime = statusTime(time.Now())
}

// cleanupDelay is how long after a sync's image is recorded the destination's clean-up runs,
// and so the next sync starts.
func cleanupDelay(rd *volsyncv1alpha1.ReplicationDestination) time.Duration {
	d, err := time.ParseDuration(rd.Annotations[CleanupDelayAnnotation])
	if err != nil || d < 0 {
		return 0
	}
	return min(d, maxImageDelay)
}

// imageDelay is how long after its mover completed the destination takes a sync's image.
func imageDelay(rd *volsyncv1alpha1.ReplicationDestination) time.Duration {
	d, err := time.ParseDuration(rd.Annotations[ImageDelayAnnotation])
	if err != nil || d < 0 {
		return DefaultImageDelay
	}
	return min(d, maxImageDelay)
}

// refusedPrefix starts the Synchronizing message of a refused transfer, which stays until a
// transfer is accepted: the refusal is the last thing that happened at this destination.
const refusedPrefix = "Refused a transfer from"

func lastTransferRefused(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, volsyncv1alpha1.ConditionSynchronizing)
	return c != nil && c.Reason == volsyncv1alpha1.SynchronizingReasonError && strings.HasPrefix(c.Message, refusedPrefix)
}

// setListening reports a destination ready for the next transfer.
func (s *store) setListening(sc *rdScope) {
	rd := sc.rd
	if manual := manualTrigger(rd.Spec.Trigger); manual != "" && manual == rd.Status.LastManualSync {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonManual,
			"Synchronized: waiting for a new spec.trigger.manual")
		return
	}
	if sc.moverClosed != "" {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
			"Waiting for the mover: "+sc.moverClosed)
		return
	}
	setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		fmt.Sprintf("Listening at %s:%d", sc.address, rsyncTLSPort))
}

func manualTrigger(t *volsyncv1alpha1.TriggerSpec) string {
	if t == nil {
		return ""
	}
	return t.Manual
}

// nextTransfer returns the oldest completed transfer in dir that has no ack yet, and the error
// of the newest ack when that answer was a refusal (else ""); it removes acknowledged transfers
// that no source collected.
func nextTransfer(dir string) (*transfer, string, string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", "", nil
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("failed to read incoming transfers: %w", err)
	}
	var oldest *transfer
	var oldestDir string
	var newest ack
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		var a ack
		if err := driver.ReadJSON(filepath.Join(d, ackFile), &a); err == nil {
			if a.Time.After(newest.Time) {
				newest = a
			}
			if time.Since(a.Time) > staleAckAge {
				_ = os.RemoveAll(d)
			}
			continue
		}
		var t transfer
		if err := driver.ReadJSON(filepath.Join(d, transferFile), &t); err != nil {
			continue // still being copied, or torn: its source removes it
		}
		if oldest == nil || t.StartTime.Before(oldest.StartTime) {
			oldest, oldestDir = &t, d
		}
	}
	return oldest, oldestDir, newest.Error, nil
}

// snapshotNameFor names the snapshot of one transfer like VolSync (volsync-<rd>-dst-<time>),
// with a hash of the transfer so that two transfers in one second differ and a retried pass
// finds the snapshot it created.
func snapshotNameFor(rdName, syncID string, start time.Time) string {
	sum := sha256.Sum256([]byte(syncID))
	return fmt.Sprintf("volsync-%s-dst-%s-%s", rdName, start.UTC().Format("20060102150405"), hex.EncodeToString(sum[:3]))
}

// ensureLatestImage returns the image of the sync whose mover completed (sc.snapname), nil while
// its snapshot is not bound yet.
func (s *store) ensureLatestImage(ctx context.Context, sc *rdScope) (*corev1.TypedLocalObjectReference, error) {
	rd := sc.rd
	switch rd.Spec.RsyncTLS.CopyMethod {
	case volsyncv1alpha1.CopyMethodSnapshot, volsyncv1alpha1.CopyMethodClone:
	default:
		// Direct (or None, or unset): the destination PVC itself is the image.
		return &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: sc.pvcName}, nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.snapname}, vs)
	if apierrors.IsNotFound(err) {
		vs = &snapshotv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: sc.snapname},
			Spec: snapshotv1.VolumeSnapshotSpec{
				Source:                  snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(sc.pvcName)},
				VolumeSnapshotClassName: rd.Spec.RsyncTLS.VolumeSnapshotClassName,
			},
		}
		if err := controllerutil.SetControllerReference(rd, vs, s.Client.Scheme()); err != nil {
			return nil, err
		}
		if err := s.Client.Create(ctx, vs); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, createFailed(err, "snapshot", vs)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil && vs.DeletionTimestamp == nil {
		// Bound is enough for VolSync (volumehandler.go, ensureImageSnapshot), ready to use or not.
		return &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: vs.Name}, nil
	}
	if vs.Status != nil && vs.Status.Error != nil {
		return nil, driver.WaitFor(volsyncRetry, "Snapshot %s failed: %s", vs.Name, ptr.Deref(vs.Status.Error.Message, "no message"))
	}
	return nil, nil
}

func (s *store) patchDestinationStatus(ctx context.Context, sc *rdScope) error {
	if equality.Semantic.DeepEqual(sc.base.Status, sc.rd.Status) {
		return nil
	}
	if err := s.Client.Status().Patch(ctx, sc.rd, client.MergeFrom(sc.base)); err != nil {
		return fmt.Errorf("failed to patch status of ReplicationDestination %s: %w", klog.KObj(sc.rd), err)
	}
	return nil
}

// afterDestinationStatus runs once the status is stored: it closes the listener if the
// destination stops accepting, answers the transfers and removes the snapshots marked for
// cleanup.
func (s *store) afterDestinationStatus(ctx context.Context, sc *rdScope) error {
	if len(sc.acks) > 0 {
		if err := s.writeListener(sc); err != nil {
			return err
		}
	}
	for _, a := range sc.acks {
		if err := driver.WriteJSON(filepath.Join(a.dir, ackFile), a.ack); err != nil {
			return err
		}
	}
	if sc.imageDone {
		// VolSync's clean-up (rsynctls/mover.go, Cleanup): the PVC's snapshot annotation goes,
		// then the objects marked for cleanup; the next sync's mover may run after that.
		if err := os.Remove(pendingImagePath(s.Opts.DataDir, sc.rd.UID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to end the pending image: %w", err)
		}
		sc.snapname = ""
		if err := s.writeListener(sc); err != nil {
			return err
		}
	}
	if !sc.received && !sc.imageDone {
		return nil
	}
	return s.cleanupSnapshots(ctx, sc.rd)
}

// Snapshot cleanup as upstream's (backube/volsync internal/controller/utils/cleanup.go): when a
// sync completes, the previous latest image is labelled for cleanup with the destination's uid
// unless it is labelled do-not-delete; after the status is stored the labelled snapshots are
// deleted. At every pass (replicationdestination_controller.go, before anything else) a snapshot
// labelled do-not-delete loses the destination's ownership and its cleanup label, so neither
// the cleanup nor the destination's deletion removes it: whoever set the label owns it now.
const (
	// doNotDeleteLabel on a snapshot asks VolSync to keep it; its value does not matter.
	doNotDeleteLabel = "volsync.backube/do-not-delete"
	// cleanupLabel marks a snapshot to delete at the end of a sync, with the owner's uid.
	cleanupLabel = "volsync.backube/cleanup"
)

// relinquishSnapshots gives up the destination's ownership of the snapshots labelled
// do-not-delete.
func (s *store) relinquishSnapshots(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	list := &snapshotv1.VolumeSnapshotList{}
	if err := s.Client.List(ctx, list, client.InNamespace(rd.Namespace), client.HasLabels{doNotDeleteLabel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list snapshots in %s: %w", rd.Namespace, err)
	}
	var errs []error
	for i := range list.Items {
		vs := &list.Items[i]
		_, marked := vs.Labels[cleanupLabel]
		owned := slices.ContainsFunc(vs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == rd.UID })
		if !owned && (!marked || vs.Labels[cleanupLabel] != string(rd.UID)) {
			continue
		}
		patch := client.MergeFrom(vs.DeepCopy())
		vs.OwnerReferences = slices.DeleteFunc(vs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == rd.UID })
		if vs.Labels[cleanupLabel] == string(rd.UID) {
			delete(vs.Labels, cleanupLabel)
		}
		if err := s.Client.Patch(ctx, vs, patch); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to release snapshot %s: %w", klog.KObj(vs), err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Released a snapshot labelled do-not-delete", "snapshot", klog.KObj(vs))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// markOldImage labels the previous latest image for cleanup once image replaces it, unless it
// is labelled do-not-delete.
func (s *store) markOldImage(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination, image *corev1.TypedLocalObjectReference) error {
	old := rd.Status.LatestImage
	if old == nil || old.Kind != "VolumeSnapshot" || image.Kind != "VolumeSnapshot" || old.Name == image.Name {
		return nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: old.Name}, vs); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, keep := vs.Labels[doNotDeleteLabel]; keep || vs.Labels[cleanupLabel] == string(rd.UID) {
		return nil
	}
	patch := client.MergeFrom(vs.DeepCopy())
	metav1.SetMetaDataLabel(&vs.ObjectMeta, cleanupLabel, string(rd.UID))
	if err := s.Client.Patch(ctx, vs, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to mark snapshot %s for cleanup: %w", klog.KObj(vs), err)
	}
	return nil
}

// cleanupSnapshots deletes the snapshots marked for the destination's cleanup; one labelled
// do-not-delete meanwhile is released instead, one another object owns too only loses the
// destination's ownership.
func (s *store) cleanupSnapshots(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination) error {
	list := &snapshotv1.VolumeSnapshotList{}
	if err := s.Client.List(ctx, list, client.InNamespace(rd.Namespace), client.MatchingLabels{cleanupLabel: string(rd.UID)}); err != nil {
		return fmt.Errorf("failed to list snapshots in %s: %w", rd.Namespace, err)
	}
	var errs []error
	for i := range list.Items {
		vs := &list.Items[i]
		_, keep := vs.Labels[doNotDeleteLabel]
		others := slices.ContainsFunc(vs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID != rd.UID })
		if vs.DeletionTimestamp != nil || (rd.Status.LatestImage != nil && rd.Status.LatestImage.Name == vs.Name) {
			continue
		}
		if keep || others {
			patch := client.MergeFrom(vs.DeepCopy())
			vs.OwnerReferences = slices.DeleteFunc(vs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == rd.UID })
			if keep {
				delete(vs.Labels, cleanupLabel)
			}
			errs = append(errs, client.IgnoreNotFound(s.Client.Patch(ctx, vs, patch)))
			continue
		}
		// The precondition keeps a label added since the list (do-not-delete) from being lost.
		err := s.Client.Delete(ctx, vs, client.Preconditions{ResourceVersion: ptr.To(vs.ResourceVersion)})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete older snapshot %s: %w", klog.KObj(vs), err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted older snapshot", "snapshot", klog.KObj(vs))
	}
	return errors.Join(errs...)
}
