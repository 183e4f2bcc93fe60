package hubless

import (
	"fmt"
	"time"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// LossBound says, from a secondary's group alone, which writes a failover to its cluster
// loses: those made on the primary after status.receivedSyncTime ("writes after 05:31:02 UTC,
// 12s ago"); ok is false when the group does not report it, and the text then says why.
func LossBound(v *v1alpha1.VolumeReplicationGroup, now time.Time) (text string, ok bool) {
	if t := v.Status.ReceivedSyncTime; t != nil {
		return fmt.Sprintf("writes after %s, %s ago", cli.Clock(t.Time), cli.Age(now.Sub(t.Time))), true
	}
	for _, b := range v.Spec.StorageClassBackends {
		if b.Backend == v1alpha1.BackendVolRep {
			return "not reported: a VolRep secondary's storage does not say what it holds (csi-addons reports a VolumeReplication's " +
				"lastSyncTime on the primary only); the primary's group reports its last sync", false
		}
	}
	if v.Spec.VolSync == nil || len(v.Spec.VolSync.ReceivePVCs) == 0 {
		return "not reported: the group receives no VolSync PVC", false
	}
	return "not reported yet: a VolSync destination of the group has not completed two syncs since it was set up", false
}

// expectedLoss says what the failover loses, from what the target knows: the writes made on
// the old primary after the last point the target holds of every PVC, when its group reports
// it; otherwise why not, and the bound while replication was healthy.
func expectedLoss(vrg *v1alpha1.VolumeReplicationGroup, now time.Time) string {
	bound, ok := LossBound(vrg, now)
	if ok {
		return fmt.Sprintf("the %s (now %s): the group holds every PVC's writes up to then (status.receivedSyncTime, from this cluster's storage); "+
			"later writes are lost, wholly or in part", bound, cli.Clock(now))
	}
	return fmt.Sprintf("the writes made on the old primary after its last group sync to this cluster, %s. "+
		"While replication was healthy it is at most about one interval (%s) plus the storage's refresh before the old primary was lost (%s now); "+
		"the promoted group reports what it restored", bound, vrg.Spec.SchedulingInterval, cli.Clock(now))
}
