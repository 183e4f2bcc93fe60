package volsync

import (
	"fmt"
	"hash/crc32"
	"time"

	"github.com/drover-io/drover/api/v1alpha1"
	multiclusterv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// KeySecretName is the name of the rsync-tls key Secret of a PVC protected by the group
// vrgName (v1alpha1.VolSyncKeySecretName, which the hub reads too).
func KeySecretName(vrgName, pvcName string) string {
	return v1alpha1.VolSyncKeySecretName(vrgName, pvcName)
}

// FinalSyncPVCName is the name of the DR-owned PVC that a relocation binds to the retained PV of
// a deleted PVC to run its final sync: "<pvc>-drover-final", shortened with a hash when it would
// be too long.
func FinalSyncPVCName(pvcName string) string {
	return v1alpha1.BoundedName(pvcName + "-drover-final")
}

// Trigger is the ReplicationSource trigger that syncs every interval: a cron schedule
// (Schedule) from a minute up; below a minute, which cron cannot express, none, so VolSync syncs
// continuously (each sync starts when the previous one ended: never later than the interval
// asks, at the cost of copying all the time). Intervals above a minute that Schedule cannot
// express are an error.
func Trigger(interval time.Duration) (*volsyncv1alpha1.TriggerSpec, error) {
	if interval > 0 && interval < time.Minute {
		return nil, nil
	}
	schedule, err := Schedule(interval)
	if err != nil {
		return nil, err
	}
	return &volsyncv1alpha1.TriggerSpec{Schedule: &schedule}, nil
}

// Schedule is the cron schedule (5 fields, as VolSync validates it) that syncs every interval:
// whole minutes below an hour ("*/N * * * *"), whole hours below a day ("0 */N * * *"), whole
// days ("0 0 */N * *"). A cron step restarts at each hour or day, so an interval that does not
// divide it (7m) also syncs at the top of the hour; VolSync users live with the same. Intervals
// below a minute or not a whole number of these units cannot be expressed: the error says what
// to choose.
func Schedule(interval time.Duration) (string, error) {
	switch {
	case interval < time.Minute || interval%time.Minute != 0:
		return "", fmt.Errorf("schedulingInterval %s cannot be a VolSync schedule, which counts whole minutes: use 1m or more, in whole minutes", interval)
	case interval < time.Hour:
		return fmt.Sprintf("*/%d * * * *", interval/time.Minute), nil
	case interval%time.Hour != 0:
		return "", fmt.Errorf("schedulingInterval %s cannot be a VolSync schedule: above an hour, use whole hours", interval)
	case interval < 24*time.Hour:
		return fmt.Sprintf("0 */%d * * *", interval/time.Hour), nil
	case interval%(24*time.Hour) != 0:
		return "", fmt.Errorf("schedulingInterval %s cannot be a VolSync schedule: above a day, use whole days", interval)
	case interval > 31*24*time.Hour:
		return "", fmt.Errorf("schedulingInterval %s cannot be a VolSync schedule: at most 31 days", interval)
	default:
		return fmt.Sprintf("0 0 */%d * *", interval/(24*time.Hour)), nil
	}
}

// maxServiceNameLength is the longest name of a Service (a DNS label).
const maxServiceNameLength = 63

// DestinationServiceName is the name VolSync gives the Service of a ReplicationDestination:
// "volsync-rsync-tls-dst-<rd>", or when that is longer than a Service name may be, the prefix
// and the CRC-32 (IEEE) of the destination's name in 8 hex digits (backube/volsync
// internal/controller/mover/rsynctls/mover.go, ensureServiceAndPublishAddress, and
// internal/controller/utils/utils.go, GetServiceName).
func DestinationServiceName(rdName string) string {
	const prefix = "volsync-rsync-tls-dst-"
	if name := prefix + rdName; len(name) <= maxServiceNameLength {
		return name
	}
	return fmt.Sprintf("%s%08x", prefix, crc32.ChecksumIEEE([]byte(rdName)))
}

// ClustersetAddress is the clusterset DNS name of a destination's exported Service:
// <service>.<namespace>.svc.clusterset.local (Multi-Cluster Services API, KEP-1645).
func ClustersetAddress(namespace, rdName string) string {
	return fmt.Sprintf("%s.%s.%s", DestinationServiceName(rdName), namespace, multiclusterv1alpha1.ClustersetDomain)
}
