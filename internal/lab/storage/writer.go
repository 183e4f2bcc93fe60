package storage

// The lab's workload writer. A pod labelled WriterLabel=true that is Running gets one goroutine
// that appends a record (internal/lab/records) every interval to each of its lab volumes, as a
// database would, so that scenarios can prove which writes a failover kept.
//
// Decisions:
//   - Writer id: <namespace>.<pod>.<first 8 characters of the pod UID>. A pod recreated on the
//     peer after a failover (a StatefulSet keeps the name) writes a new log, so every log has
//     exactly one writing process and two copies that both hold record n of a log hold the same
//     record: comparing copies compares sequence numbers, and after a failover the old log
//     shows exactly what the peer lost.
//   - Sequence: the next record is the last valid one in the log plus one, read from the log
//     whenever writing (re)starts: at start (a restarted storage controller continues its pods'
//     logs), and after a rejected or failed write (a resync may have replaced the log with the
//     peer's copy meanwhile). While writes succeed the sequence is kept in memory.
//   - Each write takes the image's lock (the mirror's point-in-time copy takes it too, so a copy
//     never holds half a record) and reads the image's state; a secondary image rejects the
//     write, which is counted, not written.
//   - Counters go to a status file, <dataDir>/writers/<namespace>.<pod>.json, rewritten at most
//     every writerStatusInterval and once more when the writer stops (running: false); pod
//     annotations would cost an API write every two seconds per pod. A status whose updatedAt
//     is old belongs to a storage controller that was killed (its cluster was stopped).

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

const (
	// WriterLabel marks a pod whose lab volumes get a writer when its value is "true".
	WriterLabel = "lab.drover.io/writer"
	// WriterIntervalAnnotation sets the time between two records of a pod's writer, as a Go
	// duration ("200ms"); DefaultWriterInterval when absent or not valid.
	WriterIntervalAnnotation = "lab.drover.io/writer-interval"
	// DefaultWriterInterval is the time between two records when the pod does not set one.
	DefaultWriterInterval = 200 * time.Millisecond
	// WriterPayloadSize is the payload of every record, in bytes.
	WriterPayloadSize = 256

	// minWriterInterval keeps a mistyped interval from spinning.
	minWriterInterval = 10 * time.Millisecond
	// writerStatusInterval is how often a writer rewrites its status file.
	writerStatusInterval = 2 * time.Second
	// writersDir holds the writers' status files under the data directory.
	writersDir = "writers"
)

// WriterStatus is what a pod's writer reports in its status file.
type WriterStatus struct {
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	UID       types.UID `json:"uid"`
	// WriterID names the writer's log in each volume.
	WriterID string `json:"writerID"`
	Interval string `json:"interval"`
	// Running is false once the writer stopped (pod deleted or not Running, controller stopping).
	Running   bool                 `json:"running"`
	UpdatedAt time.Time            `json:"updatedAt"`
	Volumes   []VolumeWriterStatus `json:"volumes"`
}

// VolumeWriterStatus counts one volume's writes.
type VolumeWriterStatus struct {
	// Volume is the pod's volume name, PVC the claim it names, Handle the image.
	Volume string `json:"volume"`
	PVC    string `json:"pvc"`
	Handle string `json:"handle"`
	// Written counts appended records; Rejected writes refused because the image is a
	// secondary; Failed writes that failed otherwise, the last of them described in LastError.
	Written   uint64 `json:"written"`
	Rejected  uint64 `json:"rejected"`
	Failed    uint64 `json:"failed"`
	LastSeq   uint64 `json:"lastSeq"`
	LastError string `json:"lastError,omitempty"`
}

// WriterID is the id of the pod's writer, which names its log in each volume.
func WriterID(pod *corev1.Pod) string {
	uid := string(pod.UID)
	return fmt.Sprintf("%s.%s.%s", pod.Namespace, pod.Name, uid[:min(8, len(uid))])
}

// WriterStatusPath is the status file of the writer of pod namespace/name in a cluster's data dir.
func WriterStatusPath(dataDir, namespace, pod string) string {
	return filepath.Join(dataDir, writersDir, namespace+"."+pod+".json")
}

// ReadWriterStatus reads the status file of the writer of pod namespace/name.
func ReadWriterStatus(dataDir, namespace, pod string) (WriterStatus, error) {
	var st WriterStatus
	raw, err := os.ReadFile(WriterStatusPath(dataDir, namespace, pod))
	if err != nil {
		return st, fmt.Errorf("failed to read the writer status of pod %s/%s: %w", namespace, pod, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("writer status of pod %s/%s is damaged: %w", namespace, pod, err)
	}
	return st, nil
}

func setupWriters(mgr ctrl.Manager, s *store) error {
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
	if err != nil || d < minWriterInterval {
		return DefaultWriterInterval, fmt.Errorf("annotation %s=%q is not a duration of at least %s", WriterIntervalAnnotation, v, minWriterInterval)
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
	run := &writerRun{
		images:  w.store.Images,
		dataDir: w.store.Opts.DataDir,
		status: WriterStatus{
			Namespace: pod.Namespace, Pod: pod.Name, UID: pod.UID, WriterID: WriterID(pod),
			Interval: interval.String(), Running: true, Volumes: vols,
		},
		next: make([]uint64, len(vols)),
	}
	go func() {
		defer close(p.done)
		run.loop(wctx, interval)
	}()
	ctrl.LoggerFrom(ctx).Info("Started writer", "writer", run.status.WriterID, "volumes", len(vols), "interval", interval.String())
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

// writeOutcome is what became of one write.
type writeOutcome int

const (
	writeOK writeOutcome = iota + 1
	writeRejected
	writeFailed
)

// writerRun is the state of one running writer, owned by its goroutine.
type writerRun struct {
	images  *driver.Images
	dataDir string
	status  WriterStatus
	// next is each volume's next sequence number; 0: read it from the log first.
	next []uint64
	// last is each volume's last outcome, to log changes only.
	last []writeOutcome
}

func (r *writerRun) loop(ctx context.Context, interval time.Duration) {
	log := ctrl.LoggerFrom(ctx)
	r.last = make([]writeOutcome, len(r.status.Volumes))
	r.saveStatus(ctx)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	saved := time.Now()
	for {
		select {
		case <-ctx.Done():
			r.status.Running = false
			r.saveStatus(ctx)
			return
		case <-tick.C:
		}
		for i := range r.status.Volumes {
			outcome := r.write(i)
			if outcome == r.last[i] {
				continue
			}
			// Changes of outcome only: a rejected write every 200 ms is not news.
			v := &r.status.Volumes[i]
			switch outcome {
			case writeOK:
				log.Info("Writing records", "volume", v.Volume, "handle", v.Handle, "seq", v.LastSeq)
			case writeRejected:
				log.Info("Image is a secondary: writes are rejected", "volume", v.Volume, "handle", v.Handle)
			case writeFailed:
				log.Error(errors.New(v.LastError), "Write failed", "volume", v.Volume, "handle", v.Handle)
			}
			r.last[i] = outcome
		}
		if time.Since(saved) >= writerStatusInterval {
			r.saveStatus(ctx)
			saved = time.Now()
		}
	}
}

// write appends the next record to volume i, unless its image is a secondary.
func (r *writerRun) write(i int) writeOutcome {
	v := &r.status.Volumes[i]
	unlock := r.images.Lock(v.Handle)
	defer unlock()
	fail := func(err error) writeOutcome {
		v.Failed++
		v.LastError = err.Error()
		r.next[i] = 0
		return writeFailed
	}
	st, err := r.images.State(v.Handle)
	if err != nil {
		return fail(err)
	}
	if !st.Writable() {
		v.Rejected++
		// The image may be replaced by the peer's copy before it is writable again.
		r.next[i] = 0
		return writeRejected
	}
	dir := r.images.VolumeDir(v.Handle)
	if r.next[i] == 0 {
		w, err := records.VerifyWriter(dir, r.status.WriterID)
		if err != nil {
			return fail(err)
		}
		r.next[i] = w.LastSeq + 1
	}
	if err := records.Append(dir, r.status.WriterID, r.next[i], WriterPayloadSize, time.Now()); err != nil {
		return fail(err)
	}
	v.Written++
	v.LastSeq = r.next[i]
	r.next[i]++
	return writeOK
}

// saveStatus replaces the writer's status file; a failure is logged, the writer goes on.
func (r *writerRun) saveStatus(ctx context.Context) {
	r.status.UpdatedAt = time.Now().UTC()
	path := WriterStatusPath(r.dataDir, r.status.Namespace, r.status.Pod)
	if err := writeWriterStatusFile(path, r.status); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to write the writer status", "path", path)
	}
}

// writeWriterStatusFile writes st as JSON to path through a rename, so readers never see half a file.
func writeWriterStatusFile(path string, st WriterStatus) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}
