package volsync

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// The recovery point of a VolSync PVC is one sync behind its source's last completion.
//
// VolSync records a sync on the ReplicationSource when the source's mover Job ends
// (mover-rsync-tls/client.sh exits once its data is sent), while the ReplicationDestination
// sets status.latestImage only after its own Job ended and the new VolumeSnapshot is bound
// (controllers/mover/rsynctls/mover.go, replicationdestination_controller.go): for seconds to
// minutes, the image a failover restores is the sync before. The destination's next mover
// starts only after that image was recorded, and the source's next sync completes only through
// that mover, so when the source's sync N+1 completed, the image of sync N exists (or a newer
// one replaced it). The backend therefore records, on the ReplicationSource, the recovery
// point of the last completion it saw (AnnotationSyncSeen) and, when a newer completion
// appears, moves it to AnnotationRecoveryPoint, which Status reports. A completion the agent
// never saw (it was down for two syncs) only keeps the reported point older than it could be.
const (
	// AnnotationSyncSeen on a ReplicationSource is the last completed sync the agent saw: its
	// start (RFC 3339), then its lastSyncTime, lastSyncDuration and lastManualSync (syncSeen).
	AnnotationSyncSeen = "drover.io/volsync-sync-seen"
	// AnnotationRecoveryPoint on a ReplicationSource is the start (RFC 3339) of the sync before
	// it: the newest one the destination is proven to hold an image of.
	AnnotationRecoveryPoint = "drover.io/volsync-recovery-point"
)

// recordSyncs records the source's last completion in its annotations when it is new, the one
// recorded before becoming the recovery point. A completion is told from the one before by its
// lastSyncTime, lastSyncDuration and lastManualSync together: the starts of two quick syncs
// fall in the same second (a relocation's final and confirming syncs do), and a completion
// missed so would leave the recovery point before the final sync.
func (b *Backend) recordSyncs(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource) replication.Result {
	point := recoveryPoint(rs.Status)
	if point == nil {
		return replication.Done()
	}
	latest := syncSeen(point, rs.Status)
	seen := strings.Fields(rs.Annotations[AnnotationSyncSeen])
	if strings.Join(seen, " ") == latest {
		return replication.Done()
	}
	if len(seen) > 1 {
		if done, err := time.Parse(time.RFC3339, seen[1]); err == nil && done.After(rs.Status.LastSyncTime.Time) {
			// A stale read of the source: its completions only move forward.
			return replication.Done()
		}
	}
	before := rs.DeepCopy()
	if len(seen) > 0 {
		metav1.SetMetaDataAnnotation(&rs.ObjectMeta, AnnotationRecoveryPoint, seen[0])
	}
	metav1.SetMetaDataAnnotation(&rs.ObjectMeta, AnnotationSyncSeen, latest)
	if err := b.client.Patch(ctx, rs, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf(
			"failed to record the last sync of ReplicationSource %s/%s: %v", rs.Namespace, rs.Name, err))
	}
	return replication.Done()
}

// syncSeen is the value of AnnotationSyncSeen for a completion: its start (the recovery point
// it gives once proven), then what tells it from others: lastSyncTime, lastSyncDuration and
// lastManualSync, separated by spaces.
func syncSeen(start *metav1.Time, st *volsyncv1alpha1.ReplicationSourceStatus) string {
	fields := []string{start.UTC().Format(time.RFC3339), st.LastSyncTime.UTC().Format(time.RFC3339)}
	if st.LastSyncDuration != nil {
		fields = append(fields, st.LastSyncDuration.Duration.String())
	}
	if st.LastManualSync != "" {
		fields = append(fields, st.LastManualSync)
	}
	return strings.Join(fields, " ")
}

// provenPoint is the recovery point recorded on the source (AnnotationRecoveryPoint), nil
// before a second completion was seen or when the annotation does not parse.
func provenPoint(rs *volsyncv1alpha1.ReplicationSource) *metav1.Time {
	at, err := time.Parse(time.RFC3339, rs.Annotations[AnnotationRecoveryPoint])
	if err != nil {
		return nil
	}
	return &metav1.Time{Time: at}
}

// recoveryPoint is the start of the last completed sync: lastSyncTime − lastSyncDuration, or
// lastSyncTime without a duration; nil before the first completion. Not lastSyncStartTime:
// VolSync sets it while a sync runs and clears it when the sync completes
// (internal/controller/statemachine/machine.go). VolSync stores times to the second and the
// duration to the nanosecond, measured from the stored start (machine.go,
// transitionToCleaningUp: now − lastSyncStartTime as read back), so the difference falls up to
// a second before that stored start; rounded up to the second it is the stored start again.
func recoveryPoint(st *volsyncv1alpha1.ReplicationSourceStatus) *metav1.Time {
	if st == nil || st.LastSyncTime == nil {
		return nil
	}
	if st.LastSyncDuration == nil || st.LastSyncDuration.Duration <= 0 {
		return st.LastSyncTime.DeepCopy()
	}
	start := st.LastSyncTime.Add(-st.LastSyncDuration.Duration)
	if whole := start.Truncate(time.Second); !whole.Equal(start) {
		start = whole.Add(time.Second)
	}
	return &metav1.Time{Time: start}
}
