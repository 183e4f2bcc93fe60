package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// The contrast the consistency-group feature is to be proven against: an application whose
// pods write twin records across their two PVCs (story.StatefulSetTwoVolumes: record n to data,
// then its twin to log; on copies of one instant log ≤ data ≤ log + 1), failed over with east
// stopped while they write. drover has no consistency groups: each volume fails over from its
// own last copy, and the lab's storage copies each at its own instant, as real per-volume
// replication does: a VolumeReplication's mirror schedule runs from its own first mirror
// (internal/lab/storage/csiaddons, volrep.go: nextMirror), and drover creates a pod's
// VolumeReplications one PVC after another; each ReplicationSource syncs on its own cycle
// (internal/lab/storage/volsync, source.go: without a trigger the next sync starts when the
// previous completes), and the cycles drift apart. So west holds each pod's two volumes from
// instants apart and the twin order is broken there, with no fault anywhere, while every
// volume passes the failover's own checks (every record up to the last group sync kept, no gap,
// none from after the loss). Three pods on VolRep, two on VolSync, so as many pairs of
// per-volume instants. The test prints what west holds; it asserts that the order is broken for
// at least one pod.
//
// It runs with DROVER_E2E=full (make test-e2e): about a minute and a half per backend.
func TestWithoutAConsistencyGroupAFailoverTearsAnApplicationsTwoVolumesApart(t *testing.T) {
	if os.Getenv(FullEnv) != "full" {
		t.Skipf("runs with %s=full (make test-e2e): about a minute and a half per backend", FullEnv)
	}
	for _, c := range []story.Case{
		{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass, Namespace: "e2e-twin-torn-volrep", Replicas: 3},
		// Two pods: VolSync's movers, one pair a PVC, make protecting a third take half a minute more.
		{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Namespace: "e2e-twin-torn-volsync", Replicas: 2},
	} {
		c.Mode, c.AppProcesses = story.SelfContained, os.Getenv(AppProcessesEnv) != "0"
		t.Run(c.Policy, func(t *testing.T) {
			ctx := context.Background()
			began := time.Now()
			r := story.New(env(t), c, lab.East)
			if err := r.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					t.Error(err)
				}
				var table writerBuffer
				story.PrintTable(&table, r.Steps)
				t.Logf("%s in %s\n%s", c.Name(), time.Since(began).Round(time.Second), table)
			}()
			if err := r.Protect(ctx).Failure(); err != nil {
				t.Fatal(err)
			}
			failover := r.Failover(ctx, lab.East)
			if err := failover.Failure(); err != nil {
				t.Fatalf("each volume's own checks: %v", err)
			}
			t.Logf("failover east→west in %s: kept %d, lost %d records, written within %s of the last group sync; twin order broken for %d of %d pods",
				failover.Duration.Round(time.Millisecond), failover.Kept, failover.Lost, failover.LossBound.Round(time.Millisecond),
				len(failover.TornTwins), c.Replicas)
			for _, tt := range failover.TornTwins {
				t.Logf("west holds %s", tt)
			}
			if len(failover.TornTwins) == 0 {
				t.Errorf("west holds every pod's two volumes in twin order: without a consistency group they should come from instants apart")
			}
			// No recovery: Close starts east again and drover demotes it on its own, while the
			// next case runs (a VolSync recovery of these volumes takes minutes).
		})
	}
}
