package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// The disaster that takes the primary site takes the hub with it: two applications protected
// on east, one on each backend, lose the hub and east together. Each is failed over to west
// with `drover failover --without-hub` and west's kubeconfig alone, keeping every record up to
// its last group sync (the records lost were written within the bound: from that sync to the
// loss). A new hub cluster, empty, gets drover's hub from the release manifests
// (lab.RebuildHub), and `drover hub restore` rebuilds the DRClusters, DRPolicies and
// DRPlacementControls from what the groups record: with east still lost, east's DRCluster is
// made from the records and declared lost (decision 0018), so its DRPolicies are Validated and
// both DRPlacementControls read FailedOver on west at once, Protected saying that east, their
// peer, is declared lost (no second copy), with west's groups not rewritten. East returns, the
// restore run again joins it and lifts its declaration, and drover, with no other step, demotes
// east's groups and removes the applications' writers there: the DRPlacementControls read
// FailedOver on west, Protected and PeerReady.
// Both applications are then relocated back to east with no record lost.
//
// DROVER_E2E=full (make test-e2e) runs it; make test runs its in-process stories
// (internal/hub: TestAFailoverWithoutTheHubKeepsWestsDataAndTheReturningHubAdoptsIt,
// TestAHubRestoredFromTheGroupsResumesWhereTheyAre).
func TestAHubLostWithEastIsRebuiltFromTheClustersAndTheStoryGoesOn(t *testing.T) {
	if os.Getenv(FullEnv) != "full" {
		t.Skip("make test runs this story in-process (internal/hub: TestAFailoverWithoutTheHubKeepsWestsDataAndTheReturningHubAdoptsIt, " +
			"TestAHubRestoredFromTheGroupsResumesWhereTheyAre); this case, drover installed from its manifests and the hub cluster " +
			"rebuilt empty (about 2 minutes more of make test, which is over its length), runs with " + FullEnv + "=full (make test-e2e)")
	}
	ctx := context.Background()
	runs := protectBoth(ctx, t)
	rebuilt := false
	t.Cleanup(func() {
		// A test that failed before the rebuild leaves the lab with its old hub.
		if !rebuilt {
			if err := testLab.Start(context.Background(), lab.Hub); err != nil {
				t.Errorf("failed to start the hub cluster again: %v", err)
			}
		}
	})

	losses, err := story.LoseTogether(ctx, runs, lab.East, func() error {
		return errors.Join(testLab.Stop(lab.Hub), testLab.Stop(lab.East))
	})
	if err != nil {
		t.Fatal(err)
	}
	promoted := map[string]int64{}
	for i, r := range runs {
		ns := r.Case().Namespace
		s := r.FailoverWithoutHub(ctx, losses[i], func(ctx context.Context) error {
			out, err := drover(ctx, t, "failover", "db", "-n", ns, "--to", lab.West, "--without-hub",
				"--cluster-kubeconfig", lab.West+"="+kubeconfigOf(t, lab.West), "--yes", "--timeout", "4m")
			if err == nil && (!strings.Contains(out, "Expected loss") || !strings.Contains(out, "treated as lost")) {
				err = fmt.Errorf("the failover's plan names no expected loss or does not say that east is treated as lost:\n%s", out)
			}
			return err
		})
		if err := s.Failure(); err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		promoted[ns] = groupOn(ctx, t, ns, lab.West).Generation
		t.Logf("%s: failover east→west without the hub in %s: kept %d, lost %d records, all written within %s of the last group sync (the bound)",
			ns, s.Duration.Round(time.Millisecond), s.Kept, s.Lost, s.LossBound.Round(time.Millisecond))
	}

	began := time.Now()
	if err := testLab.RebuildHub(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt = true
	t.Logf("a new, empty hub with drover's hub installed from the release manifests in %s", time.Since(began).Round(time.Second))
	hub := hubClient(t)
	expectHubEmpty(ctx, t, hub)
	out, err := restoreHub(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "the hub: DRCluster east created, declared lost: it did not answer") || strings.Contains(out, "skipped") {
		t.Errorf("the restore with east lost does not say that east was declared lost:\n%s", out)
	}
	for _, r := range runs {
		ns := r.Case().Namespace
		d := awaitDRPC(ctx, t, hub, ns, "restored FailedOver on west, Protected saying that east is declared lost", func(d *v1alpha1.DRPlacementControl) bool {
			_, restored := d.Annotations[hubrecord.AnnotationRestored]
			p := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionProtected)
			return restored && d.Spec.Action == v1alpha1.ActionFailover && d.Spec.FailoverCluster == lab.West &&
				settledOn(d, v1alpha1.PhaseFailedOver, lab.West) && p != nil && p.ObservedGeneration == d.Generation && p.Reason == v1alpha1.ReasonClusterDeclaredLost
		})
		// The hub finished the failover made without it, and rewrote no group role.
		expectUntouched(ctx, t, ns, lab.West, promoted[ns])
		t.Logf("%s restored with east lost: %s", ns, conditions(d))
	}
	expectDeclaredLost(ctx, t, hub, lab.East, true)

	eastBack := returnEast(ctx, t, runs)
	t.Logf("east back: demoted and its writers removed by drover %s after it answered", time.Since(eastBack).Round(time.Second))
	for _, r := range runs {
		d := awaitDRPC(ctx, t, hub, r.Case().Namespace, "FailedOver on west, Protected and PeerReady", func(d *v1alpha1.DRPlacementControl) bool {
			return settledOn(d, v1alpha1.PhaseFailedOver, lab.West) && isTrue(d, v1alpha1.ConditionProtected) && isTrue(d, v1alpha1.ConditionPeerReady)
		})
		t.Logf("%s after east's return: %s", r.Case().Namespace, conditions(d))
		expectSecondary(ctx, t, r.Case().Namespace, lab.East)
	}

	for _, r := range runs {
		s := r.Relocate(ctx, lab.West)
		if err := s.Failure(); err != nil {
			t.Fatalf("%s: %v", r.Case().Namespace, err)
		}
		if s.Lost != 0 {
			t.Errorf("%s: the relocation back to east lost %d records", r.Case().Namespace, s.Lost)
		}
		t.Logf("%s: relocation west→east in %s: kept %d, lost %d records", r.Case().Namespace, s.Duration.Round(time.Millisecond), s.Kept, s.Lost)
	}
}

// protectBoth starts the stories of two applications on east (startStory), one on each of the
// lab's policies, in self-contained mode (west brings the application up with no hub), and
// protects them. When the test ends each story is closed, its table logged and its application
// removed.
func protectBoth(ctx context.Context, t *testing.T) []*story.Run {
	t.Helper()
	var runs []*story.Run
	for _, b := range []struct{ policy, class, ns string }{
		{lab.PolicyVolRep, lab.BlockStorageClass, "e2e-hubloss-volrep"},
		{lab.PolicyVolSync, lab.FileStorageClass, "e2e-hubloss-volsync"},
	} {
		c := story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: b.policy, StorageClass: b.class, Mode: story.SelfContained,
			Namespace: b.ns, AppProcesses: os.Getenv(AppProcessesEnv) != "0"}
		// Registered first, so run last: after startStory has closed the story and logged its table.
		var r *story.Run
		t.Cleanup(func() {
			if r == nil {
				return
			}
			if err := r.Abandon(context.Background()); err != nil {
				t.Error(err)
			}
		})
		r = startStory(ctx, t, c, "")
		runs = append(runs, r)
	}
	for _, r := range runs {
		if err := r.Protect(ctx).Failure(); err != nil {
			t.Fatalf("%s: %v", r.Case().Namespace, err)
		}
	}
	return runs
}

// returnEast starts east again and, while the stories wait for drover to demote it and remove
// their writers there (story.Run.Returned), runs drover hub restore again, which joins east to
// the new hub. It returns when east answered again: the stories' grace for its stale primary
// counts from then, since neither its workload nor drover can act on it before (on a loaded
// machine the start alone has taken 29 s of the 45).
func returnEast(ctx context.Context, t *testing.T, runs []*story.Run) time.Time {
	t.Helper()
	starting := time.Now()
	if err := testLab.Start(ctx, lab.East); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("east started in %s", back.Sub(starting).Round(100*time.Millisecond))
	steps := make([]story.Step, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() { steps[i] = r.Returned(ctx, lab.East, back) })
	}
	out, err := restoreHub(ctx, t)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "skipped") || !strings.Contains(out, "the hub: DRCluster east answers and is joined: the restore's declaration that it is lost is lifted") {
		t.Errorf("the restore with east back skipped a cluster or did not lift east's declaration:\n%s", out)
	}
	expectDeclaredLost(ctx, t, hubClient(t), lab.East, false)
	for i, s := range steps {
		if err := s.Failure(); err != nil {
			t.Fatalf("%s: %v", runs[i].Case().Namespace, err)
		}
	}
	return back
}

// drover runs the built drover binary as a user with no hub configured would (no KUBECONFIG,
// no ~/.kube/config), logs its output and returns it.
func drover(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, testLab.DroverBinary(), args...) //nolint:gosec // the lab's own binary
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") && !strings.HasPrefix(e, "HOME=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	began := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("drover %s (%s, %v):\n%s", strings.Join(args, " "), time.Since(began).Round(time.Millisecond), err, out)
	if err != nil {
		return string(out), fmt.Errorf("drover %s: %w", args[0], err)
	}
	return string(out), nil
}

// restoreHub runs drover hub restore on the lab's hub with east's and west's administrator
// kubeconfigs, the hub reaching each through its proxy as the lab's join made it.
func restoreHub(ctx context.Context, t *testing.T) (string, error) {
	t.Helper()
	hub, err := testLab.Cluster(lab.Hub)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"hub", "restore", "--kubeconfig", hub.KubeconfigPath(), "--yes"}
	for _, name := range []string{lab.East, lab.West} {
		c, err := testLab.Cluster(name)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--cluster-kubeconfig", name+"="+c.KubeconfigPath(), "--cluster-server", name+"="+c.ProxiedEndpoint())
	}
	return drover(ctx, t, args...)
}

// kubeconfigOf is the path of a lab cluster's administrator kubeconfig.
func kubeconfigOf(t *testing.T, name string) string {
	t.Helper()
	c, err := testLab.Cluster(name)
	if err != nil {
		t.Fatal(err)
	}
	return c.KubeconfigPath()
}

// hubClient is a client of the lab's hub with drover's types.
func hubClient(t *testing.T) client.Client {
	t.Helper()
	cl, err := testLab.Client(lab.Hub, v1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// expectHubEmpty checks that the hub holds none of drover's objects.
func expectHubEmpty(ctx context.Context, t *testing.T, hub client.Client) {
	t.Helper()
	for _, list := range []client.ObjectList{&v1alpha1.DRPlacementControlList{}, &v1alpha1.DRPolicyList{}, &v1alpha1.DRClusterList{}} {
		if err := hub.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Fatalf("the new hub holds %d %T items: it should be empty", n, list)
		}
	}
}

// hubWait bounds the waits for the hub's DRPlacementControls.
const hubWait = 4 * time.Minute

// awaitDRPC waits until the application's DRPlacementControl on the hub is as done says and
// returns it; it fails the test at hubWait with the last one seen.
func awaitDRPC(ctx context.Context, t *testing.T, hub client.Client, namespace, what string, done func(*v1alpha1.DRPlacementControl) bool) *v1alpha1.DRPlacementControl {
	t.Helper()
	deadline := time.Now().Add(hubWait)
	last := "not found"
	for time.Now().Before(deadline) {
		d := &v1alpha1.DRPlacementControl{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, d); err == nil {
			if done(d) {
				return d
			}
			last = conditions(d)
		} else {
			last = err.Error()
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s/db: not %s after %s; last seen: %s", namespace, what, hubWait, last)
	return nil
}

// settledOn reports whether the DRPlacementControl's status judges its spec, in phase on
// cluster and Available.
func settledOn(d *v1alpha1.DRPlacementControl, phase v1alpha1.DRPCPhase, cluster string) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Status.Phase == phase && d.Status.CurrentPrimary == cluster &&
		isTrue(d, v1alpha1.ConditionAvailable)
}

func isTrue(d *v1alpha1.DRPlacementControl, t string) bool {
	return meta.IsStatusConditionTrue(d.Status.Conditions, t)
}

// conditions says a DRPlacementControl's phase, primary and conditions in a line.
func conditions(d *v1alpha1.DRPlacementControl) string {
	s := fmt.Sprintf("%s on %s (generation %d observed %d)", d.Status.Phase, d.Status.CurrentPrimary, d.Generation, d.Status.ObservedGeneration)
	for _, c := range d.Status.Conditions {
		s += fmt.Sprintf("; %s %s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// groupOn returns the application's group on cluster.
func groupOn(ctx context.Context, t *testing.T, namespace, cluster string) *v1alpha1.VolumeReplicationGroup {
	t.Helper()
	cl, err := testLab.Client(cluster, v1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	vrg := &v1alpha1.VolumeReplicationGroup{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "db"}, vrg); err != nil {
		t.Fatalf("failed to get the group of %s on %s: %v", namespace, cluster, err)
	}
	return vrg
}

// expectDeclaredLost checks that the hub's DRCluster of cluster is declared lost by the restore
// (spec.lost and its mark), or that neither is left.
func expectDeclaredLost(ctx context.Context, t *testing.T, hub client.Client, cluster string, lost bool) {
	t.Helper()
	drc := &v1alpha1.DRCluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: cluster}, drc); err != nil {
		t.Fatalf("failed to get DRCluster %s: %v", cluster, err)
	}
	_, marked := drc.Annotations[v1alpha1.AnnotationLostDeclaredByRestore]
	if (drc.Spec.Lost != nil) != lost || marked != lost {
		t.Errorf("DRCluster %s: spec.lost %+v, marked as the restore's declaration %t; want declared lost by the restore: %t", cluster, drc.Spec.Lost, marked, lost)
	}
}

// expectSecondary checks that the application's group on cluster is asked Secondary: demoted.
func expectSecondary(ctx context.Context, t *testing.T, namespace, cluster string) {
	t.Helper()
	if vrg := groupOn(ctx, t, namespace, cluster); vrg.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		t.Errorf("%s's group on %s is asked %q: drover should have demoted it", namespace, cluster, vrg.Spec.ReplicationState)
	}
}

// expectUntouched checks for 10 seconds that the application's group on cluster stays primary at
// generation: nothing is written into it.
func expectUntouched(ctx context.Context, t *testing.T, namespace, cluster string, generation int64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		vrg := groupOn(ctx, t, namespace, cluster)
		if vrg.Generation != generation || vrg.Spec.ReplicationState != v1alpha1.ReplicationStatePrimary {
			t.Fatalf("%s's group on %s was rewritten (generation %d, then %d; asked %q): the restored hub, which finishes the failover made without it, must not rewrite it",
				namespace, cluster, generation, vrg.Generation, vrg.Spec.ReplicationState)
		}
	}
}
