package storage

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
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// doNotDeleteLabel on a snapshot asks VolSync to keep it: the destination neither deletes it as
// an older image nor keeps owning it (so deleting the destination keeps it too).
const doNotDeleteLabel = "volsync.backube/do-not-delete"

// rdScope is the state of one reconcile of a ReplicationDestination.
type rdScope struct {
	rd      *volsyncv1alpha1.ReplicationDestination
	base    *volsyncv1alpha1.ReplicationDestination
	address string
	reach   string
	pvcName string
	keyName string
	psk     string
	// received: the receive phase ran, so pending names the snapshot of a transfer being
	// applied (empty: none) and older snapshots may be pruned.
	received bool
	pending  string
	// acks are written once the status that records them is stored.
	acks []pendingAck
}

type pendingAck struct {
	dir string
	ack ack
}

func (s *store) reconcileDestination(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := s.client.Get(ctx, req.NamespacedName, rd); err != nil {
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
	if rd.Status == nil {
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{}
	}
	res, err := runVolSyncPhases(ctx, sc,
		s.ensureDestinationPVC, s.ensureDestinationKey, s.publishListener, s.receive)
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
		err := s.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.pvcName}, pvc)
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, waitFor(volsyncRetry,
				"Destination PVC %s does not exist: create it or unset spec.rsyncTLS.destinationPVC", sc.pvcName)
		}
		return ctrl.Result{}, err
	}
	sc.pvcName = "volsync-" + rd.Name + "-dst"
	err := s.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.pvcName}, pvc)
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
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *spec.Capacity},
			},
		},
	}
	if err := controllerutil.SetControllerReference(rd, pvc, s.client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if err := s.client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, createFailed(err, "destination PVC", pvc)
	}
	ctrl.LoggerFrom(ctx).Info("Created destination PVC", "pvc", klog.KObj(pvc))
	return ctrl.Result{}, nil
}

// ensureDestinationKey finds the key Secret named by the spec or creates
// volsync-rsync-tls-<rd> with a random key.
func (s *store) ensureDestinationKey(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd, spec := sc.rd, sc.rd.Spec.RsyncTLS
	sc.keyName = ptr.Deref(spec.KeySecret, "volsync-rsync-tls-"+rd.Name)
	secret := &corev1.Secret{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.keyName}, secret)
	switch {
	case apierrors.IsNotFound(err) && spec.KeySecret != nil:
		return ctrl.Result{}, waitFor(volsyncRetry,
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
		if err := controllerutil.SetControllerReference(rd, secret, s.client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		err := s.client.Create(ctx, secret)
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
		return ctrl.Result{}, waitFor(volsyncRetry, "Key Secret %s has no %s key", sc.keyName, pskKey)
	}
	return ctrl.Result{}, nil
}

// publishListener makes the destination reachable: the listener file for sources on the peer,
// the address and key Secret in the status.
func (s *store) publishListener(_ context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	want := listener{Namespace: rd.Namespace, Name: rd.Name, UID: rd.UID, PSK: sc.psk, Cluster: s.opts.Cluster, Reach: sc.reach}
	if err := s.forgetDestination(rd.Namespace, rd.Name, sc.address); err != nil {
		return ctrl.Result{}, err
	}
	path := listenerPath(s.opts.DataDir, sc.address)
	var have listener
	if err := readJSON(path, &have); err != nil || have != want {
		if err := writeJSON(path, want); err != nil {
			return ctrl.Result{}, err
		}
	}
	rd.Status.RsyncTLS = &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{
		Address: ptr.To(sc.address), Port: ptr.To(rsyncTLSPort), KeySecret: ptr.To(sc.keyName),
	}
	return ctrl.Result{}, nil
}

// receive applies the oldest completed transfer, one step per pass: data into the volume, a
// snapshot of it, then the status (acks follow once the status is stored).
func (s *store) receive(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	poll := ctrl.Result{RequeueAfter: volsyncPoll}
	if rd.Spec.Paused {
		return ctrl.Result{RequeueAfter: volsyncIdle}, nil
	}
	sc.received = true
	t, dir, err := nextTransfer(incomingPath(s.opts.DataDir, sc.address))
	if err != nil {
		return ctrl.Result{}, err
	}
	if t == nil {
		if !lastTransferRefused(rd.Status.Conditions) {
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
	sc.pending = snapshotNameFor(rd.Name, filepath.Base(dir), t.StartTime)
	pv, err := s.boundVolume(ctx, rd.Namespace, sc.pvcName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := s.applyTransfer(ctx, dir, pv.Spec.CSI.VolumeHandle); err != nil {
		return ctrl.Result{}, err
	}
	image, err := s.ensureLatestImage(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if image == nil {
		setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
			fmt.Sprintf("Received %d bytes from %s; taking snapshot %s", t.Bytes, t.Source, sc.pending))
		return poll, nil
	}
	now := time.Now()
	st := rd.Status
	st.LatestImage = image
	st.LastSyncStartTime = statusTime(t.StartTime)
	st.LastSyncTime = statusTime(now)
	st.LastSyncDuration = &metav1.Duration{Duration: now.Sub(t.StartTime).Round(time.Millisecond)}
	if manual != "" {
		st.LastManualSync = manual
	}
	sc.acks = append(sc.acks, pendingAck{dir: dir, ack: ack{Image: image.Name, Time: now}})
	sc.pending = ""
	s.setListening(sc)
	ctrl.LoggerFrom(ctx).Info("Received volume", "source", t.Source, "bytes", t.Bytes,
		"image", image.Name, "duration", st.LastSyncDuration.Duration)
	return poll, nil
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
	setSynchronizing(&rd.Status.Conditions, rd.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		fmt.Sprintf("Listening at %s:%d", sc.address, rsyncTLSPort))
}

func manualTrigger(t *volsyncv1alpha1.TriggerSpec) string {
	if t == nil {
		return ""
	}
	return t.Manual
}

// nextTransfer returns the oldest completed transfer in dir that has no ack yet, and removes
// acknowledged transfers that no source collected.
func nextTransfer(dir string) (*transfer, string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("failed to read incoming transfers: %w", err)
	}
	var oldest *transfer
	var oldestDir string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		var a ack
		if err := readJSON(filepath.Join(d, ackFile), &a); err == nil {
			if time.Since(a.Time) > staleAckAge {
				_ = os.RemoveAll(d)
			}
			continue
		}
		var t transfer
		if err := readJSON(filepath.Join(d, transferFile), &t); err != nil {
			continue // still being copied, or torn: its source removes it
		}
		if oldest == nil || t.StartTime.Before(oldest.StartTime) {
			oldest, oldestDir = &t, d
		}
	}
	return oldest, oldestDir, nil
}

// snapshotNameFor names the snapshot of one transfer like VolSync (volsync-<rd>-dst-<time>),
// with a hash of the transfer so that two transfers in one second differ and a retried pass
// finds the snapshot it created.
func snapshotNameFor(rdName, syncID string, start time.Time) string {
	sum := sha256.Sum256([]byte(syncID))
	return fmt.Sprintf("volsync-%s-dst-%s-%s", rdName, start.UTC().Format("20060102150405"), hex.EncodeToString(sum[:3]))
}

// applyTransfer moves the transfer's data over the volume. Data already gone means a previous
// pass applied it.
func (s *store) applyTransfer(ctx context.Context, dir, handle string) error {
	data := filepath.Join(dir, dataDirName)
	if ok, err := exists(data); err != nil || !ok {
		return err
	}
	unlock := s.images.Lock(handle)
	defer unlock()
	if err := ReplaceDir(data, s.images.VolumeDir(handle)); err != nil {
		return fmt.Errorf("failed to apply transfer %s to volume %s: %w", filepath.Base(dir), handle, err)
	}
	ctrl.LoggerFrom(ctx).Info("Applied transfer", "transfer", filepath.Base(dir), "volume", handle)
	return nil
}

// ensureLatestImage returns the image that holds the applied transfer, nil while its snapshot
// is being taken.
func (s *store) ensureLatestImage(ctx context.Context, sc *rdScope) (*corev1.TypedLocalObjectReference, error) {
	rd := sc.rd
	switch rd.Spec.RsyncTLS.CopyMethod {
	case volsyncv1alpha1.CopyMethodSnapshot, volsyncv1alpha1.CopyMethodClone:
	default:
		// Direct (or None, or unset): the destination PVC itself is the image.
		return &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: sc.pvcName}, nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: sc.pending}, vs)
	if apierrors.IsNotFound(err) {
		vs = &snapshotv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: sc.pending},
			Spec: snapshotv1.VolumeSnapshotSpec{
				Source:                  snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(sc.pvcName)},
				VolumeSnapshotClassName: rd.Spec.RsyncTLS.VolumeSnapshotClassName,
			},
		}
		if err := controllerutil.SetControllerReference(rd, vs, s.client.Scheme()); err != nil {
			return nil, err
		}
		if err := s.client.Create(ctx, vs); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, createFailed(err, "snapshot", vs)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if snapshotReady(vs) {
		return &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: vs.Name}, nil
	}
	if vs.Status != nil && vs.Status.Error != nil {
		return nil, waitFor(volsyncRetry, "Snapshot %s failed: %s", vs.Name, ptr.Deref(vs.Status.Error.Message, "no message"))
	}
	return nil, nil
}

func (s *store) patchDestinationStatus(ctx context.Context, sc *rdScope) error {
	if equality.Semantic.DeepEqual(sc.base.Status, sc.rd.Status) {
		return nil
	}
	if err := s.client.Status().Patch(ctx, sc.rd, client.MergeFrom(sc.base)); err != nil {
		return fmt.Errorf("failed to patch status of ReplicationDestination %s: %w", klog.KObj(sc.rd), err)
	}
	return nil
}

// afterDestinationStatus runs once the status is stored: it answers the transfers and removes
// the snapshots VolSync no longer keeps.
func (s *store) afterDestinationStatus(ctx context.Context, sc *rdScope) error {
	for _, a := range sc.acks {
		if err := writeJSON(filepath.Join(a.dir, ackFile), a.ack); err != nil {
			return err
		}
	}
	if !sc.received {
		return nil
	}
	return s.pruneSnapshots(ctx, sc)
}

// pruneSnapshots deletes the snapshots the destination owns other than its latest image and
// the one being taken, and releases those labelled do-not-delete.
func (s *store) pruneSnapshots(ctx context.Context, sc *rdScope) error {
	rd := sc.rd
	keep := []string{sc.pending}
	if img := rd.Status.LatestImage; img != nil && img.Kind == "VolumeSnapshot" {
		keep = append(keep, img.Name)
	}
	list := &snapshotv1.VolumeSnapshotList{}
	if err := s.client.List(ctx, list, client.InNamespace(rd.Namespace)); err != nil {
		return fmt.Errorf("failed to list snapshots in %s: %w", rd.Namespace, err)
	}
	var errs []error
	for i := range list.Items {
		vs := &list.Items[i]
		owner := metav1.GetControllerOf(vs)
		if owner == nil || owner.UID != rd.UID || slices.Contains(keep, vs.Name) || vs.DeletionTimestamp != nil {
			continue
		}
		if vs.Labels[doNotDeleteLabel] == "true" {
			patch := client.MergeFrom(vs.DeepCopy())
			vs.OwnerReferences = slices.DeleteFunc(vs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == rd.UID })
			errs = append(errs, s.client.Patch(ctx, vs, patch))
			continue
		}
		if err := s.client.Delete(ctx, vs); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete older snapshot %s: %w", klog.KObj(vs), err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted older snapshot", "snapshot", klog.KObj(vs))
	}
	return errors.Join(errs...)
}

// boundVolume returns the lab PV bound to a PVC, or a wait while there is none.
func (s *store) boundVolume(ctx context.Context, namespace, name string) (*corev1.PersistentVolume, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, waitFor(volsyncRetry, "PVC %s does not exist", name)
		}
		return nil, err
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, waitFor(volsyncPoll, "PVC %s is not bound yet", name)
	}
	pv := &corev1.PersistentVolume{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, fmt.Errorf("failed to get PV %s of PVC %s: %w", pvc.Spec.VolumeName, name, err)
	}
	if pv.Spec.CSI == nil || !s.ours(pv.Spec.CSI.Driver) {
		return nil, &waitError{
			msg:   fmt.Sprintf("PVC %s is not a lab volume: the lab storage moves only volumes of its storage classes", name),
			after: volsyncIdle, cause: errNotLabVolume,
		}
	}
	return pv, nil
}

// errNotLabVolume: a PVC is bound to a volume of another storage, which the lab cannot copy.
var errNotLabVolume = errors.New("not a lab volume")
