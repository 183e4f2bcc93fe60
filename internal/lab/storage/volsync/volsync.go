package volsync

// VolSync in the lab
//
// The lab storage honours VolSync's rsync-over-TLS API (volsync.backube/v1alpha1) for the
// volumes of its drivers, so drover's VolSync path moves real bytes between east and west. It
// keeps VolSync's observable contract (the objects, status fields and conditions drover reads)
// and replaces the movers (pods running rsync behind stunnel) with file copies between the two
// clusters' data directories on this machine.
//
// Destination (ReplicationDestination with spec.rsyncTLS, reconciled by the storage of the
// cluster it lives on):
//   - it ensures the destination PVC: spec.rsyncTLS.destinationPVC if set (it must exist), else
//     volsync-<rd>-dst from capacity, accessModes, volumeMode and storageClassName, owned by the RD;
//   - it ensures the key Secret: spec.rsyncTLS.keySecret if set (it must exist), else
//     volsync-rsync-tls-<rd> with psk.txt = "volsync:<64 hex>", owned by the RD;
//   - it publishes status.rsyncTLS.address (by spec.rsyncTLS.serviceType, address.go:
//     volsync-<rd>.<namespace>.svc.cluster.local for ClusterIP, the default, reachable only in
//     its own cluster; volsync-<rd>.<namespace>.lab for LoadBalancer, reachable from the peer;
//     derived from the RD's name so it stays the same across restarts), port 8000 and
//     keySecret, and a listener file <dataDir>/volsync/listeners/<address>.json (namespace,
//     name, uid, key, cluster, reach, the handle of the destination PVC's volume once it is
//     bound, and why it accepts no connection: paused, or its manual trigger served), which is
//     what a source on the peer "connects" to;
//   - the data never passes through the destination: a source writes it into the destination
//     PVC's volume, file by file (rsync.go), so while a transfer runs, and for good when
//     it is cut, that volume holds part old, part new files. Every volsyncPoll the destination
//     looks for completed transfers in <dataDir>/volsync/incoming/<address>/<syncID>/
//     (transfer.json present: the source's "complete" control file), oldest first. A transfer
//     whose key differs from the destination's is refused with an ack carrying the error, and
//     the Synchronizing condition reports the refusal until a transfer is accepted (the
//     source's handshake normally refuses a wrong key before any data moves). An accepted
//     transfer ends the destination's mover, as the "complete" control file ends upstream's
//     (mover-rsync-tls/server.sh): the destination records that the image of this sync is
//     pending (<dataDir>/volsync/pending/<rd uid>.json, where upstream annotates its PVC
//     volsync.backube/snapname), closes its listener (no mover runs until the next sync's), and
//     acknowledges the transfer, so the SOURCE COMPLETES ITS SYNC BEFORE THE DESTINATION HAS AN
//     IMAGE OF IT, as upstream's does (the source's Job ends about 5 s after the control file,
//     while the destination's image waits for its Job to end and its snapshot to bind). After
//     the destination's image delay (ImageDelayAnnotation, DefaultImageDelay; held while
//     HoldImageAnnotation is "true"), with copyMethod Snapshot (or Clone) it creates a
//     VolumeSnapshot of its PVC, named volsync-<rd>-dst-<time>-<hash of syncID> and owned by the
//     RD, and once the lab snapshotter (internal/lab/storage/snapshot.go) has bound it (bound
//     is enough, as upstream's volumehandler.go ensureImageSnapshot) sets status.latestImage,
//     lastSyncTime, lastSyncDuration and lastManualSync (the trigger current then) and clears
//     lastSyncStartTime; with Direct/None the latest image is the PVC itself. A pending image is
//     finished even while the destination is paused: pause stops mover Jobs, and this one has
//     succeeded. Then the pending record goes, the listener opens again and, without a trigger
//     or with a manual trigger not served yet, the next sync starts at once (lastSyncStartTime
//     set again: a continuous destination almost always shows a running sync). A cut transfer
//     never completes: no snapshot, latestImage stays the last complete sync;
//   - snapshots are cleaned up as upstream's (internal/controller/utils/cleanup.go): at a
//     completed sync the previous latest image is labelled volsync.backube/cleanup=<rd uid>
//     unless labelled volsync.backube/do-not-delete (any value), and once the status is stored
//     the labelled snapshots are deleted; at every pass a snapshot labelled do-not-delete loses
//     the RD's ownership and cleanup label, so neither the cleanup nor the RD's deletion
//     removes it. Each step is observed again on the next pass (the snapshot's name is derived
//     from the syncID), so a crash anywhere repeats at most one step.
//   - spec.paused stops receiving new transfers and closes the listener (no mover runs); a manual trigger
//     accepts one transfer per new value (the mover of an upstream RD runs once per trigger),
//     the listener closed once it is served; a schedule is not needed on this side and is
//     ignored.
//
// Source (ReplicationSource with spec.rsyncTLS.address and spec.sourcePVC, reconciled by the
// storage of its cluster), with VolSync's trigger state machine
// (backube/volsync internal/controller/statemachine/machine.go):
//   - status.lastSyncStartTime is the state: set, a sync runs; it is set when a sync starts and
//     cleared when it completes. A running sync runs to its completion whatever the trigger
//     says meanwhile;
//   - with no sync running, one is due: at once for a source that never synced; when
//     trigger.manual differs from status.lastManualSync (manual wins over a schedule); at
//     trigger.schedule's next time after the last completion (5-field cron, robfig/cron); or,
//     without a trigger, as soon as the previous sync completed (continuous mode: a sync is
//     almost always running);
//   - when a sync completes: lastSyncTime is the completion, lastSyncDuration the time since
//     lastSyncStartTime, nextSyncTime the schedule's next time after the completion (none
//     without a schedule), lastManualSync the trigger.manual current AT THE COMPLETION (empty
//     without one), not the one current when the sync started: a trigger set while a sync runs
//     is satisfied by that sync, which may have copied the volume long before;
//   - the annotation lab.drover.io/hold-sync=true (AnnotationHoldSync) holds a running sync
//     short of its completion, so a test can keep one in flight;
//   - the mover (the copy below) fails as VolSync's mover Job does: retried every
//     volsyncRetry while the sync stays running, Synchronizing True with SyncInProgress (reason
//     Error is for reconcile errors only), status.latestMoverStatus {Failed, the log}; a
//     completed sync sets it to Successful. lab.drover.io/fail-mover=<log> (AnnotationFailMover)
//     makes the mover fail with that log, as a source volume it cannot read would;
//   - the handshake stands for stunnel's TLS-PSK: the peer's storage must run
//     (Images.PeerReachable), a listener must exist for the address and be reachable from
//     this cluster (not a ClusterIP address of the peer's), and the key in the
//     source's keySecret (psk.txt) must equal the listener's. Otherwise nothing is sent and the
//     Synchronizing condition says why (reason Error), retried every volsyncRetry while the
//     sync stays running. A refused key costs no copy, as a failed handshake sends no data. The
//     key Secret is copied to the source's cluster by whoever sets up the pair (drover, a test,
//     a person) without the destination's ownerReferences, which the garbage collector there
//     would act on;
//   - the copy (rsync.go): the source volume is copied at one instant (CopyVolume: under
//     Images.Lock, the pods using it stopped, a crash-consistent copy; copyMethod Snapshot,
//     Clone and Direct all take it this way) into the source's staging directory, then written by the lab's
//     rsync into the destination's volume in <peerDataDir>/volumes/ as rsync-tls does: a copy
//     pass (files whose size or modification time differ, each to a temporary name renamed into
//     place), then a delete pass, every file written or deleted taking the source's pace
//     (annotation lab.drover.io/rsync-file-pace, DefaultRsyncPace). Stopping the source's
//     cluster cuts it wherever it is; the source itself gives up when the peer's storage stops
//     or the listener closes or changes. The transfer directory
//     <peerDataDir>/volsync/incoming/<address>/<rs-uid>-<start ns>/ gets transfer.json (key,
//     bytes, start time) last, to mark completion. The source then waits for ack.json (also
//     while the peer is stopped: it then reports the peer unreachable); on an ack the sync
//     completes as above and the transfer directory is removed. An ack with an error reports it
//     and the sync is sent again later. Before sending a sync that an earlier pass started, the
//     source reads it back from the API server: a cache that has not seen the last completion
//     yet would send it twice.
//
// The transfer directory is the only record of a sync in flight, and every step reads it back:
// a cluster that is stopped neither sends nor receives (its process is down), and after start
// it continues from where it was. A source finding one of its own transfer directories without
// transfer.json knows it is a sync cut by a stop (one reconcile per object at a time) and
// removes it before syncing again, from the start (rsync's quick check skips what arrived).
// At start the storage removes listeners (and their incoming directories) of
// ReplicationDestinations deleted while it was down, and its staging directory.
//
// Movers' identity (identity.go): a mover runs as its moverSecurityContext's user, as
// root with capabilities when its namespace allows privileged movers, else as root without any,
// and rsync then fails; its pod passes the API server's Pod Security admission or no mover runs.
//
// Not modelled: a source's temporary PVC (its storageClassName, accessModes and
// volumeSnapshotClassName are ignored; a destination's volumeSnapshotClassName goes to its
// snapshots), a source in the destination's own cluster, Service objects (addresses by Service
// type and ServiceExports: address.go, serviceexport.go), the mover settings other than
// moverSecurityContext (resources, affinity, service account), file owners (a mover copies every
// file it can read, whoever owns it), rsync's delta transfer within a file (a changed file is
// copied whole), restic and rclone.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

const (
	// volsyncPoll is how often a destination looks for transfers and a source for its ack.
	volsyncPoll = driver.Poll
	// volsyncRetry is how long a source or destination waits before retrying what failed.
	volsyncRetry = driver.Retry
	// volsyncIdle is the safety requeue of a source waiting for a new manual trigger.
	volsyncIdle = driver.Idle
	// volsyncWorkers copy that many volumes at once (driver.Workers).
	volsyncWorkers = driver.Workers
	// staleAckAge is after how long a destination removes an acknowledged transfer that no
	// source collected (its ReplicationSource was deleted).
	staleAckAge = 10 * time.Minute

	// rsyncTLSPort is the port VolSync's rsync-tls movers listen on; the lab reports it.
	rsyncTLSPort int32 = 8000
	// pskKey is the key of the pre-shared key in a VolSync key Secret.
	pskKey = "psk.txt"
	// pskIdentity is the TLS-PSK identity VolSync writes before the key.
	pskIdentity = "volsync"

	// maxImageDelay keeps a mistyped image delay from stalling a destination for hours.
	maxImageDelay = 10 * time.Minute

	transferFile = "transfer.json"
	ackFile      = "ack.json"
	dataDirName  = "data"
)

// listener is what a destination publishes so a source on the peer can reach it.
type listener struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	PSK       string    `json:"psk"`
	// Volume is the handle of the destination PVC's volume, which the destination's mover has
	// mounted and a source's rsync writes into; empty while the PVC is not bound.
	Volume string `json:"volume,omitempty"`
	// Closed says why the destination accepts no connection (no mover runs: paused, or its
	// manual trigger served); empty while it accepts.
	Closed string `json:"closed,omitempty"`
	// Cluster is the destination's cluster; Reach who reaches the address (address.go:
	// reachCluster or reachPeer; empty, from an older lab, is reachPeer).
	Cluster string `json:"cluster,omitempty"`
	Reach   string `json:"reach,omitempty"`
	// Refuses is what a source's rsync prints when the destination's rsync daemon fails every
	// connection (its mover runs as root without capabilities, identity.go); empty while
	// it accepts them.
	Refuses string `json:"refuses,omitempty"`
}

// transfer describes a completed copy in an incoming directory; it is written last.
type transfer struct {
	// Source is <cluster>/<namespace>/<name> of the ReplicationSource.
	Source    string    `json:"source"`
	PSK       string    `json:"psk"`
	Bytes     int64     `json:"bytes"`
	StartTime time.Time `json:"startTime"`
	// Manual is the manual trigger this copy serves; empty for a schedule or continuous sync.
	Manual string `json:"manual,omitempty"`
}

// ack is the destination's answer to a transfer: its mover completed (the source's sync then
// completes), or refused it.
type ack struct {
	// Error says why the transfer was refused; empty when it was received.
	Error string    `json:"error,omitempty"`
	Time  time.Time `json:"time"`
}

// ImageDelayAnnotation on a ReplicationDestination sets how long after a sync's mover completed
// the destination takes its image, as a Go duration ("5s"), DefaultImageDelay when absent or
// not valid: the time a real destination spends ending its mover Job and binding the snapshot,
// during which the source has recorded the sync and latestImage is still the sync before.
const ImageDelayAnnotation = "lab.drover.io/image-delay"

// HoldImageAnnotation set to "true" on a ReplicationDestination keeps the image of a sync whose
// mover completed from being taken until the annotation is removed (a snapshot that does not
// bind).
const HoldImageAnnotation = "lab.drover.io/hold-image"

// CleanupDelayAnnotation on a ReplicationDestination sets how long after a sync's image is
// recorded its clean-up runs, as a Go duration; none when absent. Upstream's clean-up (deleting
// the mover Job, removing the PVC's snapshot annotation) takes a moment before the next sync
// starts, often within the second of the completion; a delay of a second or more makes the next
// sync's lastSyncStartTime later than lastSyncTime at the API's second precision.
const CleanupDelayAnnotation = "lab.drover.io/cleanup-delay"

// DefaultImageDelay keeps a gap between a source's completion and the destination's image in
// every lab sync, short enough for tests.
const DefaultImageDelay = 500 * time.Millisecond

// store is the shared driver context (internal/lab/storage/driver) that VolSync's
// controllers are methods on.
type store struct{ *driver.Store }

// Setup registers the VolSync controllers (sources, destinations, their movers) and the
// multi-cluster network's ServiceExport controller with the manager.
func Setup(mgr ctrl.Manager, d *driver.Store) error {
	s := &store{Store: d}
	if err := setupVolSync(mgr, s); err != nil {
		return err
	}
	return setupServiceExports(mgr, s)
}

func setupVolSync(mgr ctrl.Manager, s *store) error {
	if err := os.MkdirAll(filepath.Join(s.Opts.DataDir, "volsync", "listeners"), 0o750); err != nil {
		return fmt.Errorf("failed to create the VolSync directory: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("lab-volsync-destination").
		For(&volsyncv1alpha1.ReplicationDestination{}).
		Owns(&snapshotv1.VolumeSnapshot{}).
		Owns(&batchv1.Job{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: volsyncWorkers}).
		Complete(driver.ReconcilerFunc(s.reconcileDestination)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("lab-volsync-source").
		For(&volsyncv1alpha1.ReplicationSource{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: volsyncWorkers}).
		Complete(driver.ReconcilerFunc(s.reconcileSource)); err != nil {
		return err
	}
	reader := mgr.GetAPIReader()
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		s.sweepListeners(ctx, reader)
		s.sweepSourceCopies(ctx, reader)
		return nil
	}))
}

// rsyncTLSAddress is the address a destination publishes: stable for the RD's name, unique in
// its cluster (a namespace has no dots).
func rsyncTLSAddress(namespace, name string) string {
	return fmt.Sprintf("volsync-%s.%s.lab", name, namespace)
}

// validAddress refuses addresses that could leave the VolSync directories.
func validAddress(address string) error {
	if errs := validation.IsDNS1123Subdomain(address); len(errs) > 0 {
		return fmt.Errorf("address %q is not a lab address (%s); use the destination's status.rsyncTLS.address",
			address, strings.Join(errs, "; "))
	}
	return nil
}

func listenerPath(dataDir, address string) string {
	return filepath.Join(dataDir, "volsync", "listeners", address+".json")
}

func incomingPath(dataDir, address string) string {
	return filepath.Join(dataDir, "volsync", "incoming", address)
}

// sweepListeners removes, once at start, the listeners of ReplicationDestinations deleted while
// this storage was down, so sources on the peer see no listener instead of waiting forever.
func (s *store) sweepListeners(ctx context.Context, reader client.Reader) {
	log := ctrl.LoggerFrom(ctx).WithName("lab-volsync")
	// Read the files before listing, so a listener published meanwhile is never taken for stale.
	files, err := filepath.Glob(listenerPath(s.Opts.DataDir, "*"))
	if err != nil || len(files) == 0 {
		return
	}
	list := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := retryList(ctx, func() error { return reader.List(ctx, list) }); err != nil {
		log.Error(err, "Failed to list ReplicationDestinations; stale listeners stay")
		return
	}
	live := map[types.UID]bool{}
	for _, rd := range list.Items {
		live[rd.UID] = true
	}
	pending, _ := filepath.Glob(pendingImagePath(s.Opts.DataDir, "*"))
	for _, f := range pending {
		if !live[types.UID(strings.TrimSuffix(filepath.Base(f), ".json"))] {
			_ = os.Remove(f)
		}
	}
	for _, f := range files {
		var l listener
		if err := driver.ReadJSON(f, &l); err == nil && live[l.UID] {
			continue
		}
		address := strings.TrimSuffix(filepath.Base(f), ".json")
		if err := s.forgetAddress(address); err != nil {
			log.Error(err, "Failed to remove a stale listener", "address", address)
			continue
		}
		log.Info("Removed the listener of a deleted ReplicationDestination", "address", address)
	}
}

// sweepSourceCopies removes, once at start, the copies of ReplicationSources deleted while a
// sync of theirs ran.
func (s *store) sweepSourceCopies(ctx context.Context, reader client.Reader) {
	files, err := filepath.Glob(filepath.Join(s.Opts.DataDir, "volsync", "copies", "*.json"))
	if err != nil || len(files) == 0 {
		return
	}
	list := &volsyncv1alpha1.ReplicationSourceList{}
	if err := retryList(ctx, func() error { return reader.List(ctx, list) }); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list ReplicationSources; stale source copies stay")
		return
	}
	live := map[string]bool{}
	for _, rs := range list.Items {
		live[string(rs.UID)] = true
	}
	for _, f := range files {
		// <rs uid>-<sync start>.json
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if i := strings.LastIndex(name, "-"); i > 0 && !live[name[:i]] {
			_ = os.RemoveAll(strings.TrimSuffix(f, ".json"))
			_ = os.Remove(f)
		}
	}
}

// retryList retries a list until it succeeds or ctx ends: at start the API server may still be
// coming up.
func retryList(ctx context.Context, list func() error) error {
	for {
		err := list()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// forgetAddress removes a destination's listener and its incoming transfers.
func (s *store) forgetAddress(address string) error {
	if err := os.Remove(listenerPath(s.Opts.DataDir, address)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove listener %s: %w", address, err)
	}
	if err := os.RemoveAll(incomingPath(s.Opts.DataDir, address)); err != nil {
		return fmt.Errorf("failed to remove incoming transfers of %s: %w", address, err)
	}
	return nil
}

// volsyncPhase is one step of a VolSync reconcile. A phase that returns an error or a requeue
// ends the pass.
type volsyncPhase[S any] func(context.Context, S) (ctrl.Result, error)

func runVolSyncPhases[S any](ctx context.Context, sc S, phases ...volsyncPhase[S]) (ctrl.Result, error) {
	for _, phase := range phases {
		if res, err := phase(ctx, sc); err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// settleVolSync turns the outcome of the phases into what the reconciler returns, reporting
// waits and failures in the Synchronizing condition.
func settleVolSync(res ctrl.Result, err error, conds *[]metav1.Condition, generation int64) (ctrl.Result, error) {
	var wait *driver.WaitError
	switch {
	case errors.As(err, &wait) && wait.Connecting:
		setSynchronizing(conds, generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync, wait.Msg)
		return ctrl.Result{RequeueAfter: wait.After}, nil
	case errors.As(err, &wait):
		setSynchronizing(conds, generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonError, wait.Msg)
		return ctrl.Result{RequeueAfter: wait.After}, nil
	case err != nil:
		msg := err.Error()
		if errors.Is(err, reconcile.TerminalError(nil)) && errors.Unwrap(err) != nil {
			msg = errors.Unwrap(err).Error()
		}
		setSynchronizing(conds, generation, metav1.ConditionFalse, volsyncv1alpha1.SynchronizingReasonError, msg)
		return ctrl.Result{}, err
	}
	return res, nil
}

// setSynchronizing is the one setter of VolSync's Synchronizing condition.
func setSynchronizing(conds *[]metav1.Condition, generation int64, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: volsyncv1alpha1.ConditionSynchronizing, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: generation,
	})
}

// statusTime is t as the API stores it (seconds), so an unchanged status compares equal.
func statusTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t).Rfc3339Copy()
	return &mt
}

// createFailed explains a failed Create; a namespace being deleted (its objects go with it) is
// waited out.
func createFailed(err error, what string, obj client.Object) error {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return driver.WaitFor(volsyncRetry, "Namespace %s is being deleted", obj.GetNamespace())
	}
	return fmt.Errorf("failed to create %s %s: %w", what, klog.KObj(obj), err)
}
