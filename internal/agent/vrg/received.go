package vrg

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// receivedSyncTime is a secondary's status.receivedSyncTime: the oldest point its VolSync
// destinations are proven to hold (volsync.ReceivedPoint) over the PVCs it receives. It is
// nil when nothing is received, when a destination has no point yet, and when the group's
// storage classes may put a PVC on VolRep: a secondary's VolumeReplication reports no last
// sync (csi-addons asks the driver for it on a primary only), and a point over the VolSync
// PVCs alone would claim more than the group holds.
func receivedSyncTime(ctx context.Context, vs *volsync.Backend, vrg *v1alpha1.VolumeReplicationGroup, receive []v1alpha1.VolSyncReceivePVC) (*metav1.Time, error) {
	if len(receive) == 0 {
		return nil, nil
	}
	for _, b := range vrg.Spec.StorageClassBackends {
		if b.Backend == v1alpha1.BackendVolRep {
			return nil, nil
		}
	}
	points := make([]*metav1.Time, 0, len(receive))
	for _, rp := range receive {
		rd, err := vs.Destination(ctx, vrg, rp.PVCNamespace, rp.PVCName)
		if err != nil {
			return nil, err
		}
		p, err := vs.ReceivedPoint(ctx, rd)
		if err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	return volsync.OldestPoint(points), nil
}

// receivedPointDue says whether a received sync of a secondary's destination is to wake its
// group's pass (destinationChangeMatters): once per scheduling interval, to record the point
// (volsync.ReceivedPointDue); the other received syncs change nothing the pass does.
func receivedPointDue(vrg *v1alpha1.VolumeReplicationGroup, rd *volsyncv1alpha1.ReplicationDestination) bool {
	every, err := vrg.Spec.SchedulingInterval.Duration()
	if err != nil || every <= 0 {
		return false
	}
	return volsync.ReceivedPointDue(rd, every)
}

// withoutReceivedMarks removes the annotations with which the group's pass records what a
// destination received: recording them changes nothing the pass does (onlyReceivedChanged).
func withoutReceivedMarks(rd *volsyncv1alpha1.ReplicationDestination) {
	delete(rd.Annotations, volsync.AnnotationReceivedSeen)
	delete(rd.Annotations, volsync.AnnotationReceivedPoint)
}
