package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/story"
)

// The contrast the consistency-group feature is to be proven against: an application whose
// pods write twin records across their two PVCs (story.StatefulSetTwoVolumes: record n to data,
// then its twin to log; on copies of one instant log ≤ data ≤ log + 1), failed over with east
// stopped while they write. Without a consistency group each volume fails over from its
// own last copy, and the lab's storage copies each at its own instant, as real per-volume
// replication does: a VolumeReplication's mirror schedule runs from its own first mirror
// (internal/lab/storage/csiaddons, volrep.go: nextMirror), and drover creates a pod's
// VolumeReplications one PVC after another; each ReplicationSource syncs on its own cycle
// (internal/lab/storage/volsync, source.go: without a trigger the next sync starts when the
// previous completes), and the cycles drift apart (the VolSync case waits until they have:
// transfersOutOfStep). So west holds each pod's two volumes from instants apart and the twin
// order is broken there, with no fault anywhere, while every volume passes the failover's own
// checks (every record up to the last group sync kept, no gap, none from after the loss). Three pods on VolRep, two on VolSync, so as many pairs of
// per-volume instants. The test prints what west holds; it asserts that the order is broken for
// at least one pod.
//
// make test-long (the long tier) runs the VolRep case (about 30 s after the lab's start); make
// test runs the same failover with a group in its place; DROVER_E2E=full (make test-e2e) runs
// the VolRep case and adds the VolSync case, which waits up to 3 minutes for its transfers to
// come apart.
func TestWithoutAConsistencyGroupAFailoverTearsAnApplicationsTwoVolumesApart(t *testing.T) {
	labtest.LongTier(t, "TestWithAConsistencyGroupAFailoverKeepsEveryPodsTwoVolumesOfOneInstant",
		"the contrast: without a group the same failover tears the twins apart")
	cases := []story.Case{
		{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass, Namespace: "e2e-twin-torn-volrep", Replicas: 3},
	}
	if os.Getenv(FullEnv) == "full" {
		// Two pods: VolSync's movers, one pair a PVC, make protecting a third take half a minute more.
		cases = append(cases, story.Case{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Namespace: "e2e-twin-torn-volsync", Replicas: 2})
	}
	for _, c := range cases {
		c.Mode, c.AppProcesses = story.SelfContained, os.Getenv(AppProcessesEnv) != "0"
		t.Run(c.Policy, func(t *testing.T) {
			ctx := context.Background()
			r := startStory(ctx, t, c, "")
			if err := r.Protect(ctx).Failure(); err != nil {
				t.Fatal(err)
			}
			if c.Policy == lab.PolicyVolSync {
				if err := transfersOutOfStep(ctx, t, c.Namespace, lab.West); err != nil {
					t.Fatal(err)
				}
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

// transfersOutOfStep waits until the last transfers to cluster of some pod's two volumes were
// copied at least half a second apart, read from the records in the ReplicationDestinations'
// PVCs there (rsync writes each transfer into it), and says what it saw. drover creates a
// group's ReplicationSources in one pass and, below a minute, each syncs again as soon as its
// previous sync completed (no trigger): the two sources of a pod start together, and while
// their cycles are in step the lab copies both volumes while the pod is stopped for the first
// (internal/lab/freeze counts a process's holds: the second copy, begun before the first one's
// thaw, sees the same instant), so the peer holds them in twin order. The cycles come apart
// as their syncs' lengths vary; a real VolSync's snapshots, taken per PVC, are never of one
// instant.
func transfersOutOfStep(ctx context.Context, t *testing.T, namespace, cluster string) error {
	cl, err := testLab.Client(cluster, volsyncv1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	lc, err := testLab.Cluster(cluster)
	if err != nil {
		return err
	}
	began, last := time.Now(), ""
	for time.Since(began) < outOfStepWithin {
		wrote, err := transferred(ctx, cl, lc.StorageDir(), namespace)
		if err != nil {
			return err
		}
		last = ""
		for claim, at := range wrote {
			log, ok := wrote["log-"+strings.TrimPrefix(claim, "data-")]
			if !strings.HasPrefix(claim, "data-") || !ok {
				continue
			}
			apart := log.Sub(at)
			last += fmt.Sprintf(" %s %s;", claim, apart.Round(time.Millisecond))
			if apart.Abs() >= 500*time.Millisecond {
				t.Logf("after %s the last transfers to %s of %s and its log were copied %s apart (log after data: %s)",
					time.Since(began).Round(time.Second), cluster, claim, apart.Abs().Round(time.Millisecond), apart.Round(time.Millisecond))
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the transfers of every pod's two volumes stayed within half a second of each other for %s (log after data:%s): the lab copied them at one instant", outOfStepWithin, last)
}

// outOfStepWithin bounds the wait for a pod's two VolSync cycles to come apart.
const outOfStepWithin = 3 * time.Minute

// transferred returns, for each ReplicationDestination of namespace on a cluster, the time of
// the last record its PVC holds: when the source copied the volume it transferred last.
func transferred(ctx context.Context, cl client.Client, storageDir, namespace string) (map[string]time.Time, error) {
	rds := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := cl.List(ctx, rds, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("failed to list the ReplicationDestinations of %s: %w", namespace, err)
	}
	out := map[string]time.Time{}
	for _, rd := range rds.Items {
		name := "volsync-" + rd.Name + "-dst"
		if rd.Spec.RsyncTLS != nil && rd.Spec.RsyncTLS.DestinationPVC != nil {
			name = *rd.Spec.RsyncTLS.DestinationPVC
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil || pv.Spec.CSI == nil {
			continue
		}
		rep, err := records.Verify(storage.VolumePath(storageDir, pv.Spec.CSI.VolumeHandle))
		if err != nil || len(rep.Writers) != 1 {
			continue
		}
		out[rd.Name] = rep.Writers[0].LastWrite
	}
	return out, nil
}

// TestWithAConsistencyGroupAFailoverKeepsEveryPodsTwoVolumesOfOneInstant is the contrast test
// with the remedy: the same application on VolRep, its DRPlacementControl naming one
// consistency group of all its PVCs (every pod's data and log), failed over with east stopped
// while the pods write. drover replicates the group with one VolumeGroupReplication, which the
// lab's storage mirrors at one instant (internal/lab/storage/csiaddons, volgroup_mirror.go), and
// west's promotion restores the group under the handle it mirrored: west holds every pod's two
// volumes in twin order. It asserts that no pod is torn, beside the failover's own checks.
func TestWithAConsistencyGroupAFailoverKeepsEveryPodsTwoVolumesOfOneInstant(t *testing.T) {
	c := story.Case{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Namespace: "e2e-twin-group-volrep", Replicas: 3, Mode: story.SelfContained, AppProcesses: os.Getenv(AppProcessesEnv) != "0",
		ConsistencyGroups: []v1alpha1.ConsistencyGroup{{Name: "db"}}}
	ctx := context.Background()
	r := startStory(ctx, t, c, " with consistency group db")
	if err := r.Protect(ctx).Failure(); err != nil {
		t.Fatal(err)
	}
	if err := groupReplicates(ctx, c.Namespace, lab.East, 2*int(c.Replicas)); err != nil {
		t.Fatal(err)
	}
	failover := r.Failover(ctx, lab.East)
	if err := failover.Failure(); err != nil {
		t.Fatalf("failover: %v", err)
	}
	t.Logf("failover east→west in %s: kept %d, lost %d records, written within %s of the last group sync; twin order broken for %d of %d pods",
		failover.Duration.Round(time.Millisecond), failover.Kept, failover.Lost, failover.LossBound.Round(time.Millisecond),
		len(failover.TornTwins), c.Replicas)
	for _, tt := range failover.TornTwins {
		t.Errorf("west holds %s", tt)
	}
	if err := groupRestored(ctx, c.Namespace, lab.West, 2*int(c.Replicas)); err != nil {
		t.Error(err)
	}
}

// groupRestored checks that west promoted the group east mirrored: its VolumeGroupReplication
// names the content the promotion restored under east's group handle, and its
// VolumeReplicationGroup reports the group with every member.
func groupRestored(ctx context.Context, namespace, cluster string, members int) error {
	cl, err := testLab.Client(cluster, replicationv1alpha1.AddToScheme, v1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db-db"}, vgr); err != nil {
		return fmt.Errorf("failed to get the group's VolumeGroupReplication on %s: %w", cluster, err)
	}
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	if err := cl.Get(ctx, client.ObjectKey{Name: vgr.Spec.VolumeGroupReplicationContentName}, content); err != nil {
		return fmt.Errorf("failed to get VolumeGroupReplicationContent %q on %s: %w", vgr.Spec.VolumeGroupReplicationContentName, cluster, err)
	}
	vrg := &v1alpha1.VolumeReplicationGroup{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, vrg); err != nil {
		return fmt.Errorf("failed to get the VolumeReplicationGroup on %s: %w", cluster, err)
	}
	if vgr.Status.State != replicationv1alpha1.PrimaryState || vgr.Spec.VolumeGroupReplicationContentName != "drover-"+namespace+"-db-db" ||
		len(vrg.Status.ConsistencyGroups) != 1 || len(vrg.Status.ConsistencyGroups[0].Members) != members {
		return fmt.Errorf("on %s: VolumeGroupReplication %s state %q, content %q (handle %q); VolumeReplicationGroup's groups %+v",
			cluster, vgr.Name, vgr.Status.State, content.Name, content.Spec.VolumeGroupReplicationHandle, vrg.Status.ConsistencyGroups)
	}
	return nil
}

// groupReplicates checks that the application's PVCs on cluster are replicated by one
// VolumeGroupReplication, with members PVCs and no VolumeReplication of their own.
func groupReplicates(ctx context.Context, namespace, cluster string, members int) error {
	cl, err := testLab.Client(cluster, replicationv1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	groups := &replicationv1alpha1.VolumeGroupReplicationList{}
	if err := cl.List(ctx, groups, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("failed to list the VolumeGroupReplications of %s: %w", namespace, err)
	}
	if len(groups.Items) != 1 || len(groups.Items[0].Status.PersistentVolumeClaimsRefList) != members {
		return fmt.Errorf("want one VolumeGroupReplication of %d PVCs in %s on %s, got %d: %+v", members, namespace, cluster, len(groups.Items), groups.Items)
	}
	vrs := &replicationv1alpha1.VolumeReplicationList{}
	if err := cl.List(ctx, vrs, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("failed to list the VolumeReplications of %s: %w", namespace, err)
	}
	for _, vr := range vrs.Items {
		if vr.Spec.DataSource.Kind != "VolumeGroupReplication" {
			return fmt.Errorf("PVC %s of the group has a VolumeReplication of its own on %s", vr.Spec.DataSource.Name, cluster)
		}
	}
	return nil
}

// TestAConsistencyGroupGoesThroughTheWholeStory runs the e2e suite's whole story (story.Full:
// protect, failover, the old primary back and resynced as one group, failover back,
// relocations both ways, unprotect) for the two-volume application with one consistency group
// of all its PVCs on VolRep; every failover must keep every pod's two volumes of one instant.
// DROVER_E2E=full (make test-e2e) runs it.
func TestAConsistencyGroupGoesThroughTheWholeStory(t *testing.T) {
	if os.Getenv(FullEnv) != "full" {
		// Like the e2e matrix's other whole stories, a long suite of its own target; make test
		// runs this group's failover (TestWithAConsistencyGroupAFailoverKeeps...) as its slice.
		t.Skip("the whole story of a consistency group (about 2 minutes) runs with " + FullEnv + "=full (make test-e2e); make test runs its failover slice")
	}
	c := story.Case{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Namespace: "e2e-twin-group-full", Replicas: 2, Mode: story.SelfContained, AppProcesses: os.Getenv(AppProcessesEnv) != "0",
		ConsistencyGroups: []v1alpha1.ConsistencyGroup{{Name: "db"}}}
	ctx := context.Background()
	r := startStory(ctx, t, c, " with consistency group db")
	if err := r.Full(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Steps {
		for _, tt := range s.TornTwins {
			t.Errorf("%s %s→%s: %s holds %s", s.Action, s.From, s.To, s.To, tt)
		}
	}
}

// startStory starts the story of case c from east and, when the test ends, closes it and logs
// its table under the case's name followed by what.
func startStory(ctx context.Context, t *testing.T, c story.Case, what string) *story.Run {
	t.Helper()
	return startStoryIn(ctx, t, env(t), c, what)
}

// startStoryIn is startStory in the story environment e.
func startStoryIn(ctx context.Context, t *testing.T, e story.Env, c story.Case, what string) *story.Run {
	t.Helper()
	began := time.Now()
	r := story.New(e, c, lab.East)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		var table writerBuffer
		story.PrintTableOf(&table, r.Steps, c.Unit())
		t.Logf("%s%s in %s\n%s", c.Name(), what, time.Since(began).Round(time.Second), table)
	})
	return r
}
