package hub_test

import (
	"context"
	"os"
	"testing"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// A forced promotion in the case drover cannot know: east is partitioned from the hub and
// west (the lab's network partition) while it runs and its application writes. The failover to
// west proceeds as for a lost cluster and the DRPlacementControl says so; the storage forces
// west's promotion, so both clusters hold writable primaries, which the story's watcher
// reports. West serves the records of the last sync and none that east wrote after the
// partition; after the heal, with no human step, east's group is demoted, its application
// stopped, and none of east's later writes reach west. Then unprotect.
func TestAFailoverDuringAPartitionDemotesTheCutOffPrimaryWhenHealed(t *testing.T) {
	ctx := context.Background()
	c := story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: policyVolRep, StorageClass: lab.BlockStorageClass,
		Mode: story.SelfContained, Namespace: "story-partition"}
	r := story.New(storyEnv(t), c, lab.East)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []func() story.Step{
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.FailoverDuringPartition(ctx, lab.East) },
		func() story.Step { return r.Heal(ctx, lab.East) },
		func() story.Step { return r.Unprotect(ctx) },
	}
	for _, step := range steps {
		if err := step().Failure(); err != nil {
			t.Error(err)
			break
		}
	}
	closeErr := r.Close()
	story.PrintTable(os.Stderr, r.Steps)
	for _, s := range r.Splits() {
		t.Logf("the watcher reported, during the partition: %s", s)
	}
	if closeErr != nil {
		t.Error(closeErr)
	}
	t.Logf("longest time both clusters ran the application: %s", r.Overlap())
}
