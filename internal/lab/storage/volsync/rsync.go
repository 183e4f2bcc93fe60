package volsync

// The lab's rsync-tls data path, as unkind as the real one. Upstream's source mover
// (backube/volsync mover-rsync-tls/client.sh) runs rsync against the destination mover's rsync
// daemon, which writes straight into the destination PVC: a first pass copies every file that
// differs (each file written to a temporary name and renamed, rsync's default), a second pass
// deletes the files the source no longer has, and only then does the client send the
// "complete" control file that lets the destination mover exit and the destination take its
// snapshot. A source lost between the first file and that control file leaves the destination
// PVC with some files new, some old, and files the source deleted still there; no snapshot is
// taken, so only status.latestImage stays a consistent point.
//
// The lab does the same from the source's storage process: it takes the crash-consistent copy
// of the source volume (CopyVolume, into its staging directory), then writes it file by
// file into the destination's volume (named by the destination's listener, as the mover's
// mount) in the peer's data directory, pacing every file it writes or deletes, and writes
// transfer.json last, the control file. Killing the source's storage process (`drover lab
// stop`) cuts the transfer wherever it is. The source checks the peer and the listener between
// files and gives up, the volume left as it is, when the peer's storage stops or the
// destination stops listening; its own process stopping (SIGTERM) ends it at once too.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

const (
	// RsyncPaceAnnotation on a ReplicationSource sets how long the lab's rsync takes for every
	// file it writes or deletes at the destination, as a Go duration ("20ms"), so a test can
	// cut a transfer mid-way; DefaultRsyncPace when absent or not valid.
	RsyncPaceAnnotation = "lab.drover.io/rsync-file-pace"
	// DefaultRsyncPace keeps a transfer of a few files within milliseconds, yet never instant.
	DefaultRsyncPace = 2 * time.Millisecond
	// maxRsyncPace keeps a mistyped pace from stalling a source for hours.
	maxRsyncPace = 10 * time.Second
	// rsyncCheckEvery is how often a transfer checks that the peer still runs and listens.
	rsyncCheckEvery = 50 * time.Millisecond
)

// errTransferCut: the peer stopped, or stopped listening, while a transfer was writing.
var errTransferCut = errors.New("transfer cut")

// rsyncPace is the source's pace per file.
func rsyncPace(rs *volsyncv1alpha1.ReplicationSource) time.Duration {
	d, err := time.ParseDuration(rs.Annotations[RsyncPaceAnnotation])
	if err != nil || d < 0 {
		return DefaultRsyncPace
	}
	return min(d, maxRsyncPace)
}

// sourceCopy is the point-in-time copy of the source volume that one sync sends, taken when the
// sync starts, as upstream's copyMethod Snapshot takes a snapshot of the source PVC before its
// mover Job runs (backube/volsync internal/controller/mover/rsynctls/mover.go, ensureSourcePVC;
// volumehandler.go, EnsurePVCFromSrc): a sync that waits for its destination's mover sends
// what the volume held when the sync started, not when the destination was ready, and a mover
// retried after a cut transfer sends the same copy again.
type sourceCopy struct {
	dir   string
	Bytes int64 `json:"bytes"`
}

// copyPath is where the copy of the sync of a source that started at start is kept; it
// survives a restart of the storage, as the snapshot and its PVC do upstream.
func copyPath(dataDir string, uid types.UID, start time.Time) string {
	return filepath.Join(dataDir, "volsync", "copies", fmt.Sprintf("%s-%d", uid, start.Unix()))
}

// takeSourceCopy ensures the copy of the running sync: taken once, at the sync's start (the
// pass that started it, or the first pass after a restart that finds none).
func (s *store) takeSourceCopy(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	_, err := s.sourceCopyOf(ctx, sc, true)
	return ctrl.Result{}, err
}

// sourceCopyOf returns the running sync's copy, taking it when take is set and there is none.
func (s *store) sourceCopyOf(ctx context.Context, sc *rsScope, take bool) (*sourceCopy, error) {
	rs := sc.rs
	if rs.Status.LastSyncStartTime == nil {
		return nil, nil
	}
	dir := copyPath(s.Opts.DataDir, rs.UID, rs.Status.LastSyncStartTime.Time)
	var have sourceCopy
	if err := driver.ReadJSON(dir+".json", &have); err == nil {
		have.dir = dir
		return &have, nil
	}
	if !take {
		return nil, nil
	}
	pv, err := s.BoundVolume(ctx, rs.Namespace, rs.Spec.SourcePVC)
	if err != nil {
		return nil, err
	}
	// Copies of earlier syncs of this source are done with (a crash between a completion and
	// their removal leaves them).
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), string(rs.UID)+"-*"))
	for _, o := range old {
		_ = os.RemoveAll(o)
	}
	staging := driver.StagingPath(s.Opts.DataDir, filepath.Base(dir))
	defer func() { _ = os.RemoveAll(staging) }()
	n, err := s.CopyVolume(pv.Spec.CSI.VolumeHandle, staging)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(dir), 0o750)
	}
	if err == nil {
		err = os.Rename(staging, dir)
	}
	if err == nil {
		err = driver.WriteJSON(dir+".json", sourceCopy{Bytes: n})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to copy source volume %s: %w", pv.Spec.CSI.VolumeHandle, err)
	}
	return &sourceCopy{dir: dir, Bytes: n}, nil
}

// send writes the running sync's copy of the source volume into the destination's volume,
// file by file, then marks the transfer complete (transfer.json) for the destination.
func (s *store) send(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	cp, err := s.sourceCopyOf(ctx, sc, true)
	if err != nil || cp == nil {
		return ctrl.Result{}, err
	}
	l, err := s.openListener(sc.address)
	if err != nil {
		return ctrl.Result{}, err
	}
	start := time.Now()
	dir := filepath.Join(incomingPath(s.Opts.PeerDataDir, sc.address), fmt.Sprintf("%s-%d", rs.UID, start.UnixNano()))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create transfer %s: %w", filepath.Base(dir), err)
	}
	r := &rsyncRun{ctx: ctx, pace: rsyncPace(rs), check: func() bool { return s.stillListening(sc.address, l) }}
	st, err := r.sync(cp.dir, state.VolumePath(s.Opts.PeerDataDir, l.Volume))
	if err == nil {
		err = driver.WriteJSON(filepath.Join(dir, transferFile), transfer{
			Source: fmt.Sprintf("%s/%s/%s", s.Opts.Cluster, rs.Namespace, rs.Name),
			PSK:    sc.psk, Bytes: cp.Bytes, StartTime: start, Manual: sc.manual,
		})
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		if errors.Is(err, errTransferCut) {
			return ctrl.Result{}, driver.WaitFor(volsyncRetry,
				"The sync to %s was cut after %d files written and %d deleted (the peer stopped or stopped listening): its volume is left part old, part new; the mover is retried",
				sc.address, st.written, st.deleted)
		}
		return ctrl.Result{}, fmt.Errorf("failed to send the copy of volume %s: %w", rs.Spec.SourcePVC, err)
	}
	status := rs.Status
	if sc.schedule != nil {
		status.NextSyncTime = statusTime(sc.schedule.Next(status.LastSyncStartTime.Time))
	}
	setSynchronizing(&status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		fmt.Sprintf("Sent %d bytes to %s: waiting for the destination to apply them", cp.Bytes, sc.address))
	ctrl.LoggerFrom(ctx).Info("Sent volume", "pvc", rs.Spec.SourcePVC, "address", sc.address, "bytes", cp.Bytes,
		"written", st.written, "deleted", st.deleted, "send", time.Since(start).Round(time.Millisecond))
	return ctrl.Result{RequeueAfter: volsyncPoll}, nil
}

// openListener reads the destination's listener for a transfer: it must accept connections and
// name the volume its mover has mounted.
func (s *store) openListener(address string) (listener, error) {
	var l listener
	if err := driver.ReadJSON(listenerPath(s.Opts.PeerDataDir, address), &l); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return l, driver.WaitFor(volsyncRetry, "No ReplicationDestination listens at %s on the peer cluster: check spec.rsyncTLS.address", address)
		}
		return l, err
	}
	switch {
	case l.Closed != "":
		// Upstream's client retries its connection every few seconds until the destination's
		// next mover listens; the lab looks again sooner, for quicker tests.
		return l, driver.ConnectingFor(volsyncPoll, "The destination at %s accepts no connection: %s", address, l.Closed)
	case l.Volume == "":
		return l, driver.ConnectingFor(volsyncRetry, "The destination at %s has no volume ready yet", address)
	}
	return l, nil
}

// stillListening reports whether the peer's storage runs and the destination still listens
// with the volume the transfer writes into.
func (s *store) stillListening(address string, was listener) bool {
	if !s.Images.PeerReachable() {
		return false
	}
	var l listener
	return driver.ReadJSON(listenerPath(s.Opts.PeerDataDir, address), &l) == nil && l.UID == was.UID && l.Volume == was.Volume && l.Closed == ""
}

// rsyncRun is one rsync from a directory into another, written in place as rsync-tls does.
type rsyncRun struct {
	// ctx ends with the storage process: a stopped cluster's transfer ends where it is, as a
	// mover's does when its cluster is lost, instead of running on through the shutdown.
	ctx context.Context //nolint:containedctx // one run's lifetime, never stored beyond it
	// pace is how long every file written or deleted takes.
	pace time.Duration
	// check is asked between files whether the transfer may go on; nil never stops.
	check     func() bool
	lastCheck time.Time
	stats     rsyncStats
}

// rsyncStats counts what one rsync changed at the destination.
type rsyncStats struct {
	written, deleted int
}

// sync makes dst hold what src holds: a copy pass (files that differ in size or modification
// time, each written to a temporary name and renamed; links that differ), then a delete pass
// (what src lacks). As rsync -aAhHSxz (upstream's client.sh), owners, modes and times of
// everything below dst are kept, of unchanged files too, and symbolic links are links (upstream
// munges them in transit and restores them before the mover exits); dst's own directory keeps
// its own, as upstream's first pass leaves the volume's root out. Hard links arrive as separate
// files (CopyTree's limits).
func (r *rsyncRun) sync(src, dst string) (rsyncStats, error) {
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return r.stats, err
	}
	var dirs []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
			return r.ensureDir(target)
		case d.Type().IsRegular():
			return r.copyIfChanged(path, target)
		case d.Type()&fs.ModeSymlink != 0:
			return r.linkIfChanged(path, target)
		}
		return nil
	})
	for _, rel := range slices.Backward(dirs) {
		if err != nil {
			break
		}
		err = driver.CopyMeta(filepath.Join(src, rel), filepath.Join(dst, rel))
	}
	if err == nil {
		err = r.deleteExtra(src, dst)
	}
	return r.stats, err
}

// ensureDir makes target a directory, replacing what else is there.
func (r *rsyncRun) ensureDir(target string) error {
	if ti, err := os.Lstat(target); err == nil && !ti.IsDir() {
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	return os.MkdirAll(target, 0o700)
}

// linkIfChanged makes target the symbolic link src is unless it is already, paced and checked.
func (r *rsyncRun) linkIfChanged(src, target string) error {
	link, err := os.Readlink(src)
	if err != nil {
		return err
	}
	if have, err := os.Readlink(target); err == nil && have == link {
		return driver.CopyMeta(src, target)
	}
	if err := r.step(); err != nil {
		return err
	}
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	if err := os.Symlink(link, target); err != nil {
		return err
	}
	r.stats.written++
	return driver.CopyMeta(src, target)
}

// copyIfChanged copies one file unless the target has its size and modification time
// (rsync's quick check), paced and checked; the target gets the file's metadata either way.
func (r *rsyncRun) copyIfChanged(src, target string) error {
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if ti, err := os.Lstat(target); err == nil && ti.Mode().IsRegular() && ti.Size() == si.Size() && ti.ModTime().Equal(si.ModTime()) {
		return driver.CopyMeta(src, target)
	}
	if err := r.step(); err != nil {
		return err
	}
	if ti, err := os.Lstat(target); err == nil && ti.IsDir() {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	tmp := filepath.Join(filepath.Dir(target), fmt.Sprintf(".%s.rsync-%d", filepath.Base(target), time.Now().UnixNano()))
	if _, err := driver.CopyFile(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := driver.CopyMeta(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	r.stats.written++
	return nil
}

// deleteExtra removes from dst, deepest first, what src does not hold (rsync's --delete pass).
func (r *rsyncRun) deleteExtra(src, dst string) error {
	var extra []string
	err := filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dst, path)
		if err != nil || rel == "." {
			return err
		}
		si, err := os.Lstat(filepath.Join(src, rel))
		if errors.Is(err, os.ErrNotExist) || (err == nil && si.IsDir() != d.IsDir()) {
			extra = append(extra, path)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(extra, func(a, b string) int { return -strings.Compare(a, b) })
	for _, path := range extra {
		if err := r.step(); err != nil {
			return err
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		r.stats.deleted++
	}
	return nil
}

// step paces one change and, every rsyncCheckEvery, asks whether the transfer may go on.
func (r *rsyncRun) step() error {
	if r.pace > 0 {
		select {
		case <-r.ctx.Done():
		case <-time.After(r.pace):
		}
	}
	if r.ctx.Err() != nil {
		return errTransferCut
	}
	if r.check == nil || time.Since(r.lastCheck) < rsyncCheckEvery {
		return nil
	}
	r.lastCheck = time.Now()
	if !r.check() {
		return errTransferCut
	}
	return nil
}
