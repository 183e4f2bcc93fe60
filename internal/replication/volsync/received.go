package volsync

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// What a secondary holds, from its destinations alone (the group's status.receivedSyncTime).
//
// Each mover run of an rsync-tls ReplicationDestination receives one sync of the source, and
// the source's syncs run one after another: the source's sync N+1 takes its snapshot after its
// sync N completed, and sync N completed while the destination's mover of sync N ran, which
// started after the destination's sync N started. So once the destination has recorded the
// image of sync N+1 (its latest image), it holds every write the source made before the start
// of the destination's sync N. The destination's own last start is no such bound: the source
// may take its next snapshot before the destination is listening again, and waits for it.
// The start of the sync before the last is kept on the destination, as recordSyncs keeps a
// source's: AnnotationReceivedSeen names the last completion seen, and when a newer one
// appears its start moves to AnnotationReceivedPoint.
const (
	// AnnotationReceivedSeen on a ReplicationDestination is its last completed sync the agent
	// saw: its start (RFC 3339), then its lastSyncTime (RFC 3339).
	AnnotationReceivedSeen = "drover.io/volsync-received-seen"
	// AnnotationReceivedPoint on a ReplicationDestination is the start (RFC 3339) of the sync
	// before AnnotationReceivedSeen's: the source's writes before it are in the latest image.
	AnnotationReceivedPoint = "drover.io/volsync-received-point"
)

// ReceivedPoint records the destination's last completed sync and returns the point up to
// which its latest image is proven to hold the source's writes; nil before two completions
// were seen, or when the destination holds no image.
func (b *Backend) ReceivedPoint(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination) (*metav1.Time, error) {
	if LatestImage(rd) == nil || rd.Status.LastSyncTime == nil {
		return nil, nil
	}
	start := destinationStart(rd.Status)
	latest := start.UTC().Format(time.RFC3339) + " " + rd.Status.LastSyncTime.UTC().Format(time.RFC3339)
	seen := strings.Fields(rd.Annotations[AnnotationReceivedSeen])
	if strings.Join(seen, " ") != latest && !staleRead(seen, rd.Status.LastSyncTime.Time) {
		before := rd.DeepCopy()
		if len(seen) > 0 {
			metav1.SetMetaDataAnnotation(&rd.ObjectMeta, AnnotationReceivedPoint, seen[0])
		}
		metav1.SetMetaDataAnnotation(&rd.ObjectMeta, AnnotationReceivedSeen, latest)
		if err := b.client.Patch(ctx, rd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return nil, fmt.Errorf("failed to record the last sync of ReplicationDestination %s/%s: %w", rd.Namespace, rd.Name, err)
		}
	}
	at, err := time.Parse(time.RFC3339, rd.Annotations[AnnotationReceivedPoint])
	if err != nil {
		return nil, nil //nolint:nilerr // no point recorded yet (or one someone else wrote badly): unknown
	}
	return &metav1.Time{Time: at}, nil
}

// staleRead says whether the destination read completed before the completion seen last: a
// stale read, since completions only move forward.
func staleRead(seen []string, completed time.Time) bool {
	if len(seen) < 2 {
		return false
	}
	done, err := time.Parse(time.RFC3339, seen[1])
	return err == nil && done.After(completed)
}

// destinationStart is the start of the destination's last completed sync, rounded down to the
// second (an earlier point is the safe side): lastSyncTime − lastSyncDuration, or lastSyncTime
// without a duration.
func destinationStart(st *volsyncv1alpha1.ReplicationDestinationStatus) time.Time {
	if st.LastSyncDuration == nil || st.LastSyncDuration.Duration <= 0 {
		return st.LastSyncTime.Time
	}
	return st.LastSyncTime.Add(-st.LastSyncDuration.Duration).Truncate(time.Second)
}

// OldestPoint is the oldest of the points, nil when any is nil (a PVC with no known point makes
// the group's unknown) or there are none.
func OldestPoint(points []*metav1.Time) *metav1.Time {
	var oldest *metav1.Time
	for _, p := range points {
		if p == nil {
			return nil
		}
		if oldest == nil || p.Before(oldest) {
			oldest = p
		}
	}
	return oldest
}

// ReceivedPointDue says whether a destination has completed a sync at least every after the
// last completion recorded on it (AnnotationReceivedSeen), or has none recorded: its group's pass
// is then due to record it. The passes of a secondary are not woken by each received sync (its
// destinations receive several a minute); recording one completion in every interval keeps the
// point within about two intervals of the syncs, and a completion skipped only leaves it older:
// the start of any earlier completion is a bound as well.
func ReceivedPointDue(rd *volsyncv1alpha1.ReplicationDestination, every time.Duration) bool {
	if LatestImage(rd) == nil || rd.Status.LastSyncTime == nil {
		return false
	}
	seen := strings.Fields(rd.Annotations[AnnotationReceivedSeen])
	if len(seen) < 2 {
		return true
	}
	done, err := time.Parse(time.RFC3339, seen[1])
	return err != nil || rd.Status.LastSyncTime.Sub(done) >= every
}
