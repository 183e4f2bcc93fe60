package hub_test

import (
	"context"
	"os"
	"testing"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// The storage forces a promotion while the peer holds a reachable
// primary (csi-addons retries ceph-csi's FailedPrecondition with force), so a failover that
// promotes the target while the old primary answers and still runs makes two writable
// primaries. The hub demotes the old primary first: the story's watcher never sees both
// images primary or writers on both clusters, and the target holds every record written
// before the failover was asked. Then back the same way, and unprotect.
func TestAFailoverFromAClusterThatAnswersNeverMakesTwoWritablePrimaries(t *testing.T) {
	for _, c := range []story.Case{
		{Workload: story.StatefulSetKeepsPVCs, Policy: policyVolRep, StorageClass: lab.BlockStorageClass, Mode: story.SelfContained, Namespace: "story-failover-up"},
		{Workload: story.DeploymentWithPVC, Policy: policyVolRep, StorageClass: lab.BlockStorageClass, Mode: story.Placement, Namespace: "story-failover-up-placed"},
	} {
		t.Run(c.Name(), func(t *testing.T) { failoversFromReachable(t, c) })
	}
}

// failoversFromReachable protects case c on east, fails it over to west and back with the
// source up each time, unprotects it, and fails the test on any step's failure or any moment
// of two writable primaries.
func failoversFromReachable(t *testing.T, c story.Case) {
	ctx := context.Background()
	r := story.New(storyEnv(t), c, lab.East)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []story.Step{r.Protect(ctx)}
	if steps[0].Err == nil {
		steps = append(steps, r.FailoverFromReachable(ctx, lab.East))
	}
	if steps[len(steps)-1].Err == nil {
		steps = append(steps, r.FailoverFromReachable(ctx, lab.West))
	}
	violations := r.Violations()
	if steps[len(steps)-1].Err == nil {
		steps = append(steps, r.Unprotect(ctx))
	}
	closeErr := r.Close()
	story.PrintTable(os.Stderr, r.Steps)
	for _, s := range steps {
		if err := s.Failure(); err != nil {
			t.Error(err)
		}
	}
	if len(violations) > 0 {
		t.Errorf("two writable primaries during the failovers: %v", violations)
	}
	if closeErr != nil {
		t.Error(closeErr)
	}
	t.Logf("longest time both clusters ran the application: %s", r.Overlap())
}
