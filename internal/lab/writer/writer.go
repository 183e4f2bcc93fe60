package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/internal/lab/records"
)

const (
	// DefaultInterval is the time between two records when the pod does not set one.
	DefaultInterval = 200 * time.Millisecond
	// MinInterval keeps a mistyped interval from spinning.
	MinInterval = 10 * time.Millisecond
	// PayloadSize is the payload of every record, in bytes.
	PayloadSize = 256
	// DefaultStatusInterval is how often a writer rewrites its status file.
	DefaultStatusInterval = 2 * time.Second
)

// ErrRejected is what Volumes.Open returns for a volume that takes no writes now (a secondary
// image): counted as rejected, not as failed.
var ErrRejected = errors.New("the volume takes no writes")

// Volumes gives a writer its volumes, one write at a time.
type Volumes interface {
	// Open prepares writes to volume i (its index in Status.Volumes) and returns the volume's
	// directory and the function that ends them; ErrRejected when the volume takes no writes
	// now. The writer reads and writes the volume only between Open and the end.
	Open(i int) (dir string, end func(), err error)
}

// Dirs are volumes that are directories a process writes at will: its mounted PVCs.
type Dirs []string

// Open returns directory i.
func (d Dirs) Open(i int) (string, func(), error) { return d[i], func() {}, nil }

// Options configure a Writer.
type Options struct {
	// Interval is the time between two rounds of writes.
	Interval time.Duration
	// PayloadSize is the payload of every record, in bytes.
	PayloadSize int
	// Sync fsyncs every record and index entry before the writer counts it written.
	Sync bool
	// StatusPath is the status file; empty: none.
	StatusPath string
	// StatusInterval is how often the status file is rewritten while running.
	StatusInterval time.Duration
}

// outcome is what became of a volume's last write.
type outcome int

const (
	writeOK outcome = iota + 1
	writeRejected
	writeFailed
)

// volume is what the writer knows of one volume's log.
type volume struct {
	// known is set while last is the log's last valid record; cleared by a rejected or failed
	// write, after which the log is read again.
	known bool
	last  uint64
	// outcome is the last write's outcome, to log changes only.
	outcome outcome
}

// Writer commits records to a pod's volumes. It is owned by the goroutine that runs it.
type Writer struct {
	opts   Options
	vols   Volumes
	status Status
	state  []volume
}

// New returns a writer of status.Volumes through vols; status names the writer and its
// volumes, in the order the writer writes them.
func New(status Status, vols Volumes, opts Options) (*Writer, error) {
	if err := records.ValidateWriterID(status.WriterID); err != nil {
		return nil, err
	}
	if opts.Interval < MinInterval {
		return nil, fmt.Errorf("writer interval %s is shorter than %s", opts.Interval, MinInterval)
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = DefaultStatusInterval
	}
	status.Interval, status.Running = opts.Interval.String(), true
	return &Writer{opts: opts, vols: vols, status: status, state: make([]volume, len(status.Volumes))}, nil
}

// Status returns the writer's status as it stands.
func (w *Writer) Status() Status { return w.status }

// Run writes a round every interval until ctx ends, then writes the status file once more
// (running: false) and returns.
func (w *Writer) Run(ctx context.Context) {
	w.saveStatus(ctx)
	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	saved := time.Now()
	for {
		select {
		case <-ctx.Done():
			w.status.Running = false
			w.saveStatus(ctx)
			return
		case <-tick.C:
		}
		w.round(ctx)
		if time.Since(saved) >= w.opts.StatusInterval {
			w.saveStatus(ctx)
			saved = time.Now()
		}
	}
}

// round brings every volume, in order, to its target (target) and logs changes of outcome.
func (w *Writer) round(ctx context.Context) {
	logger := log.FromContext(ctx)
	for i := range w.status.Volumes {
		got := w.advance(i)
		if got == 0 || got == w.state[i].outcome {
			continue
		}
		// Changes of outcome only: a rejected write every 200 ms is not news.
		v := &w.status.Volumes[i]
		switch got {
		case writeOK:
			logger.Info("Writing records", "volume", v.Volume, "pvc", v.PVC, "handle", v.Handle, "dir", v.Dir, "seq", v.LastSeq)
		case writeRejected:
			logger.Info("Image is a secondary: writes are rejected", "volume", v.Volume, "handle", v.Handle)
		case writeFailed:
			logger.Error(errors.New(v.LastError), "Write failed", "volume", v.Volume, "pvc", v.PVC, "handle", v.Handle, "dir", v.Dir)
		}
		w.state[i].outcome = got
	}
}

// target is the last record volume i is to hold after this round: the first volume's next
// record once every other volume holds its last one, else its last; a later volume, the last
// record of the volume before it. ok is false while the logs it depends on are not read yet.
func (w *Writer) target(i int) (last uint64, ok bool) {
	if i > 0 {
		prev := w.state[i-1]
		return prev.last, prev.known
	}
	first := w.state[0]
	for _, v := range w.state[1:] {
		if !v.known || v.last < first.last {
			return first.last, true
		}
	}
	return first.last + 1, true
}

// advance opens volume i, reads its log when its last record is not known, and commits the
// records up to its target. It returns the outcome of its last write, 0 when it wrote nothing.
func (w *Writer) advance(i int) outcome {
	v, st := &w.status.Volumes[i], &w.state[i]
	fail := func(err error) outcome {
		v.Failed++
		v.LastError = err.Error()
		st.known = false
		return writeFailed
	}
	dir, end, err := w.vols.Open(i)
	if errors.Is(err, ErrRejected) {
		v.Rejected++
		// The image may be replaced by the peer's copy before it is writable again.
		st.known = false
		return writeRejected
	}
	if err != nil {
		return fail(err)
	}
	defer end()
	if !st.known {
		rep, err := records.VerifyWriter(dir, w.status.WriterID)
		if err != nil {
			return fail(err)
		}
		st.known, st.last = true, rep.LastSeq
		v.LastSeq = rep.LastSeq
	}
	target, ok := w.target(i)
	var got outcome
	for ok && st.last < target {
		seq := st.last + 1
		if err := records.Commit(dir, w.status.WriterID, seq, w.opts.PayloadSize, time.Now(), w.opts.Sync); err != nil {
			return fail(err)
		}
		v.Written++
		v.LastSeq, st.last = seq, seq
		got = writeOK
	}
	return got
}

// saveStatus replaces the status file; a failure is logged, the writer goes on.
func (w *Writer) saveStatus(ctx context.Context) {
	if w.opts.StatusPath == "" {
		return
	}
	w.status.UpdatedAt = time.Now().UTC()
	if err := WriteStatus(w.opts.StatusPath, w.status); err != nil {
		log.FromContext(ctx).Error(err, "Failed to write the writer status", "path", w.opts.StatusPath)
	}
}
