package storage

// The lab's workload writer as a goroutine of the storage controller: a pod labelled
// WriterLabel=true that is Running gets one writer (internal/lab/writer, the loop that
// `drover lab writer` runs inside a pod too) that commits a record every interval to each of its
// lab volumes, on the pod's behalf, for pods on fake nodes that run no process.
//
// A pod labelled WriterLabel=process writes itself: it runs `drover lab writer` (the image
// WriterImage, which the lab kubelet maps to the drover binary) on the lab kubelet's node, over
// its mounted PVCs, and the storage controller starts no writer for it. Its status file goes to
// the same directory: the lab kubelet binds WriterStatusDir into every container at
// WriterStatusMountPath, and the pod names that path in $LAB_WRITER_STATUS_DIR. The storage
// controller creates the directory writable by every user (sticky, as /tmp), since the pods'
// writers run as their own users.
//
// Decisions (the writer's own are in internal/lab/writer):
//   - Each write takes the image's lock (the mirror's point-in-time copy takes it too, so a copy
//     never holds half a record, nor a record without its index entry) and reads the image's
//     state; a secondary image rejects the write, which is counted, not written. Records are
//     not fsynced: the copies are taken by the same machine under the same lock.
//   - Status files are <dataDir>/writers/<namespace>.<pod>.json (WriterStatusPath); pod
//     annotations would cost an API write every two seconds per pod. A status whose updatedAt
//     is old belongs to a storage controller that was killed (its cluster was stopped).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/writer"
)

const (
	// WriterLabel marks a pod whose lab volumes get a writer when its value is "true", and a
	// pod that writes them itself when it is WriterProcess.
	WriterLabel = "lab.drover.io/writer"
	// WriterProcess is the WriterLabel value of a pod that runs `drover lab writer` itself: the
	// storage controller writes nothing on its behalf.
	WriterProcess = "process"
	// WriterImage is the image of the lab's writer pods; the lab kubelet maps it to the drover
	// binary, whose `lab writer` command a pod names.
	WriterImage = "lab/writer"
	// WriterStatusMountPath is where the lab kubelet binds WriterStatusDir in every container,
	// for the status files of writer processes ($LAB_WRITER_STATUS_DIR).
	WriterStatusMountPath = "/run/drover-lab/writers"
	// WriterIntervalAnnotation sets the time between two records of a pod's writer, as a Go
	// duration ("200ms"); DefaultWriterInterval when absent or not valid.
	WriterIntervalAnnotation = "lab.drover.io/writer-interval"
	// DefaultWriterInterval is the time between two records when the pod does not set one.
	DefaultWriterInterval = writer.DefaultInterval
	// WriterPayloadSize is the payload of every record, in bytes.
	WriterPayloadSize = writer.PayloadSize

	// writersDir holds the writers' status files under the data directory.
	writersDir = "writers"
)

// WriterStatus is what a pod's writer reports in its status file (writer.Status).
type WriterStatus = writer.Status

// VolumeWriterStatus counts one volume's writes (writer.VolumeStatus).
type VolumeWriterStatus = writer.VolumeStatus

// WriterID is the id of the pod's writer, which names its log in each volume (writer.ID).
func WriterID(pod *corev1.Pod) string { return writer.ID(pod.Namespace, pod.Name, pod.UID) }

// WriterStatusDir is the directory of the writers' status files in a cluster's data dir.
func WriterStatusDir(dataDir string) string { return filepath.Join(dataDir, writersDir) }

// WriterStatusPath is the status file of the writer of pod namespace/name in a cluster's data dir.
func WriterStatusPath(dataDir, namespace, pod string) string {
	return writer.StatusFile(WriterStatusDir(dataDir), namespace, pod)
}

// ReadWriterStatus reads the status file of the writer of pod namespace/name.
func ReadWriterStatus(dataDir, namespace, pod string) (WriterStatus, error) {
	st, err := writer.ReadStatus(WriterStatusPath(dataDir, namespace, pod))
	if err != nil {
		return st, fmt.Errorf("failed to read the writer status of pod %s/%s: %w", namespace, pod, err)
	}
	return st, nil
}

// EnsureWriterStatusDir creates WriterStatusDir of a cluster's data dir, writable by every user
// (sticky, as /tmp), so that writer processes of any user write their status files there.
func EnsureWriterStatusDir(dataDir string) error {
	dir := WriterStatusDir(dataDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("failed to create the writers' status directory %s: %w", dir, err)
	}
	//nolint:gosec // pods' writer processes of any user write their status files here
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("failed to let every user write in the writers' status directory %s: %w", dir, err)
	}
	return nil
}

func setupWriters(mgr ctrl.Manager, s *store) error {
	if err := EnsureWriterStatusDir(s.Opts.DataDir); err != nil {
		return err
	}
	w := &writers{store: s, running: map[types.NamespacedName]*podWriter{}}
	// As a runnable, w learns when the manager stops and stops every writer.
	if err := mgr.Add(w); err != nil {
		return fmt.Errorf("failed to add the lab writers: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("lab-writer").
		For(&corev1.Pod{}).Complete(w)
}

// writers starts and stops the pods' writers. It keeps the running writers, which are not
// per-request state but goroutines that outlive a request.
type writers struct {
	store *store

	mu      sync.Mutex
	stopped bool
	running map[types.NamespacedName]*podWriter
}

// podWriter is one pod's running writer.
type podWriter struct {
	uid      types.UID
	interval time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
}

// stop ends the writer and waits until it wrote its last status.
func (p *podWriter) stop() {
	p.cancel()
	<-p.done
}

// Start waits for the manager to stop, then stops every writer.
func (w *writers) Start(ctx context.Context) error {
	<-ctx.Done()
	w.mu.Lock()
	w.stopped = true
	all := w.running
	w.running = map[types.NamespacedName]*podWriter{}
	w.mu.Unlock()
	for _, p := range all {
		p.stop()
	}
	return nil
}

// Reconcile runs a writer for a Running writer pod with lab volumes, and stops it otherwise.
func (w *writers) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := w.store.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			w.stop(ctx, req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("failed to get pod %s: %w", req.NamespacedName, err)
	}
	if pod.Labels[WriterLabel] != "true" || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		w.stop(ctx, req.NamespacedName)
		return ctrl.Result{}, nil
	}
	interval, intervalErr := writerInterval(pod)
	if w.runs(req.NamespacedName, pod.UID, interval) {
		return ctrl.Result{}, nil
	}
	if intervalErr != nil {
		ctrl.LoggerFrom(ctx).Info("Using the default writer interval", "reason", intervalErr.Error())
	}
	vols, err := w.store.writerVolumes(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	// An earlier pod of the same name, or the same pod with another interval.
	w.stop(ctx, req.NamespacedName)
	if len(vols) > 0 {
		w.start(ctx, pod, interval, vols)
	}
	return ctrl.Result{}, nil
}

func writerInterval(pod *corev1.Pod) (time.Duration, error) {
	v, ok := pod.Annotations[WriterIntervalAnnotation]
	if !ok {
		return DefaultWriterInterval, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < writer.MinInterval {
		return DefaultWriterInterval, fmt.Errorf("annotation %s=%q is not a duration of at least %s", WriterIntervalAnnotation, v, writer.MinInterval)
	}
	return d, nil
}

// runs reports whether the writer of this very pod runs with this interval.
func (w *writers) runs(key types.NamespacedName, uid types.UID, interval time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.running[key]
	return ok && p.uid == uid && p.interval == interval
}

func (w *writers) stop(ctx context.Context, key types.NamespacedName) {
	w.mu.Lock()
	p, ok := w.running[key]
	delete(w.running, key)
	w.mu.Unlock()
	if ok {
		p.stop()
		ctrl.LoggerFrom(ctx).Info("Stopped writer")
	}
}

func (w *writers) start(ctx context.Context, pod *corev1.Pod, interval time.Duration, vols []VolumeWriterStatus) {
	images := make(imageVolumes, len(vols))
	for i, v := range vols {
		images[i] = imageVolume{images: w.store.Images, handle: v.Handle}
	}
	st := WriterStatus{Namespace: pod.Namespace, Pod: pod.Name, UID: pod.UID, WriterID: WriterID(pod), Volumes: vols}
	run, err := writer.New(st, images, writer.Options{
		Interval: interval, PayloadSize: WriterPayloadSize,
		StatusPath: WriterStatusPath(w.store.Opts.DataDir, pod.Namespace, pod.Name),
	})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to start writer")
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	// The writer outlives this request: it keeps the request's logger, not its cancellation,
	// and ends by its own cancel (stop) or when the manager stops (Start).
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &podWriter{uid: pod.UID, interval: interval, cancel: cancel, done: make(chan struct{})}
	w.running[client.ObjectKeyFromObject(pod)] = p
	go func() {
		defer close(p.done)
		run.Run(wctx)
	}()
	ctrl.LoggerFrom(ctx).Info("Started writer", "writer", st.WriterID, "volumes", len(vols), "interval", interval.String())
}

// writerVolumes returns the pod's volumes that are lab volumes of this storage.
func (s *store) writerVolumes(ctx context.Context, pod *corev1.Pod) ([]VolumeWriterStatus, error) {
	var vols []VolumeWriterStatus
	for _, v := range pod.Spec.Volumes {
		var claim string
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = pod.Name + "-" + v.Name
		default:
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: claim}, pvc); err != nil {
			return nil, fmt.Errorf("failed to get PVC %s/%s of writer pod %s: %w", pod.Namespace, claim, pod.Name, err)
		}
		if pvc.Spec.VolumeName == "" {
			return nil, fmt.Errorf("PVC %s/%s of writer pod %s is not bound yet", pod.Namespace, claim, pod.Name)
		}
		pv := &corev1.PersistentVolume{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			return nil, fmt.Errorf("failed to get PV %s of writer pod %s/%s: %w", pvc.Spec.VolumeName, pod.Namespace, pod.Name, err)
		}
		if pv.Spec.CSI == nil || !s.Ours(pv.Spec.CSI.Driver) {
			continue
		}
		vols = append(vols, VolumeWriterStatus{Volume: v.Name, PVC: claim, Handle: pv.Spec.CSI.VolumeHandle})
	}
	return vols, nil
}

// imageVolume is a lab volume's image, which a writer writes under the image's lock while the
// image is writable.
type imageVolume struct {
	images *driver.Images
	handle string
}

// imageVolumes are a pod's lab volumes, in the order of its volumes.
type imageVolumes []imageVolume

// Open takes the image's lock and refuses a write to a secondary image.
func (vs imageVolumes) Open(i int) (string, func(), error) {
	v := vs[i]
	unlock := v.images.Lock(v.handle)
	st, err := v.images.State(v.handle)
	if err != nil {
		unlock()
		return "", nil, err
	}
	if !st.Writable() {
		unlock()
		return "", nil, writer.ErrRejected
	}
	return v.images.VolumeDir(v.handle), unlock, nil
}
