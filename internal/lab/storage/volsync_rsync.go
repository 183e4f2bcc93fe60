package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// send copies the source volume at one point in time into a new transfer at the destination,
// transfer.json last.
func (s *store) send(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	pv, err := s.boundVolume(ctx, rs.Namespace, rs.Spec.SourcePVC)
	if err != nil {
		return ctrl.Result{}, err
	}
	handle := pv.Spec.CSI.VolumeHandle
	start := time.Now()
	dir := filepath.Join(incomingPath(s.opts.PeerDataDir, sc.address), fmt.Sprintf("%s-%d", rs.UID, start.UnixNano()))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create transfer %s: %w", filepath.Base(dir), err)
	}
	n, err := s.copyPointInTime(handle, filepath.Join(dir, dataDirName))
	if err == nil {
		err = writeJSON(filepath.Join(dir, transferFile), transfer{
			Source: fmt.Sprintf("%s/%s/%s", s.opts.Cluster, rs.Namespace, rs.Name),
			PSK:    sc.psk, Bytes: n, StartTime: start, Manual: sc.manual,
		})
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return ctrl.Result{}, fmt.Errorf("failed to send volume %s: %w", handle, err)
	}
	st := rs.Status
	st.LastSyncStartTime = statusTime(start)
	if sc.schedule != nil {
		st.NextSyncTime = statusTime(sc.schedule.Next(start))
	}
	setSynchronizing(&st.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
		fmt.Sprintf("Sent %d bytes to %s: waiting for the destination to apply them", n, sc.address))
	ctrl.LoggerFrom(ctx).Info("Sent volume", "volume", handle, "address", sc.address, "bytes", n,
		"copy", time.Since(start).Round(time.Millisecond))
	return ctrl.Result{RequeueAfter: volsyncPoll}, nil
}

// copyPointInTime copies a volume under its image lock, so no record writer tears the copy.
func (s *store) copyPointInTime(handle, dst string) (int64, error) {
	unlock := s.images.Lock(handle)
	defer unlock()
	return CopyTree(s.images.VolumeDir(handle), dst)
}
