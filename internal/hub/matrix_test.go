package hub_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

// storyEnv is the story's view of this suite's lab, whose hub and agents run in-process: losing
// a cluster stops its agent first, bringing it back starts the agent after.
func storyEnv(t *testing.T) story.Env {
	t.Helper()
	env, err := story.LabEnv(testLab.Lab, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	env.StopCluster = func(cluster string) error {
		stop(cluster)
		return testLab.Stop(cluster)
	}
	env.StartCluster = func(ctx context.Context, cluster string) error {
		if err := testLab.Start(ctx, cluster); err != nil {
			return err
		}
		return startAgent(cluster)
	}
	return env
}

// The whole story (protect, failover with the primary stopped both ways, recover, relocate both
// ways, unprotect) for a workload whose PVCs go away with it, driven by the hub: a Deployment in
// placement mode here; the e2e matrix (make test-e2e) runs every such workload in both modes on
// both backends, the StatefulSet that deletes its PVCs among them.
func TestTheStoryOfWorkloadsThatDeleteTheirPVCs(t *testing.T) {
	labtest.LongTier(t, "TestAFailoverFromAClusterThatAnswersNeverMakesTwoWritablePrimaries",
		"the Deployment's failover with east stopped, its recoveries and both relocations (its failovers with east up stay in make test)")
	for _, c := range []story.Case{
		{Workload: story.DeploymentWithPVC, Policy: policyVolRep, StorageClass: lab.BlockStorageClass, Mode: story.Placement, Namespace: "story-deployment"},
	} {
		t.Run(c.Name(), func(t *testing.T) {
			r := story.New(storyEnv(t), c, lab.East)
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			err := r.Full(context.Background(), true)
			if err != nil && os.Getenv("STORY_DEBUG") != "" {
				pvcs := &corev1.PersistentVolumeClaimList{}
				_ = storyEnv(t).Clusters[lab.East].List(context.Background(), pvcs, client.InNamespace(c.Namespace))
				for _, p := range pvcs.Items {
					for _, m := range p.ManagedFields {
						t.Logf("east PVC %s uid %s created %s: manager %s op %s at %s", p.Name, p.UID, p.CreationTimestamp, m.Manager, m.Operation, m.Time)
					}
				}
			}
			if cerr := r.Close(); cerr != nil {
				t.Error(cerr)
			}
			story.PrintTable(os.Stderr, r.Steps)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("longest overlap after a return: %s", r.Overlap())
		})
	}
}
