package vrg

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

func TestDecideCycleSyncsOnlyAfterTheHooksOfEachInterval(t *testing.T) {
	interval := time.Minute
	now := time.Date(2026, 12, 8, 1, 0, 30, 0, time.UTC)
	last := now.Add(-90 * time.Second)   // the last cycle, triggered and synced
	recent := now.Add(-20 * time.Second) // a cycle begun within the interval
	list := []*v1alpha1.Hook{
		{Name: "checkpoint", Point: v1alpha1.HookBeforeSync},
		{Name: "flush", Point: v1alpha1.HookBeforeSync, OnError: v1alpha1.HookContinue},
	}
	run := func(name string, at time.Time, result v1alpha1.HookResult) v1alpha1.HookRun {
		return v1alpha1.HookRun{Name: name, Point: v1alpha1.HookBeforeSync, Action: volsync.CycleTrigger(at), Attempt: 1, Result: result,
			StartTime: &metav1.Time{Time: at}}
	}
	for _, tc := range []struct {
		name string
		runs []v1alpha1.HookRun
		src  volsync.Sources
		want syncCycle
	}{{
		name: "a sync asked and not completed is waited for, whatever the runs say",
		runs: []v1alpha1.HookRun{run("checkpoint", recent, v1alpha1.HookSucceeded), run("flush", recent, v1alpha1.HookSucceeded)},
		src:  volsync.Sources{Trigger: last, Syncing: "app/data"},
		want: syncCycle{state: cycleSyncing, syncing: "app/data"},
	}, {
		name: "sources that never had a cycle begin one now",
		src:  volsync.Sources{},
		want: syncCycle{state: cycleHooks, key: volsync.CycleTrigger(now)},
	}, {
		name: "a synced cycle waits an interval from its beginning",
		runs: []v1alpha1.HookRun{run("checkpoint", recent, v1alpha1.HookSucceeded), run("flush", recent, v1alpha1.HookSucceeded)},
		src:  volsync.Sources{Trigger: recent},
		want: syncCycle{state: cycleIdle, due: recent.Add(interval)},
	}, {
		name: "once the interval is over a new cycle runs its hooks before any trigger",
		runs: []v1alpha1.HookRun{run("checkpoint", last, v1alpha1.HookSucceeded), run("flush", last, v1alpha1.HookSucceeded)},
		src:  volsync.Sources{Trigger: last},
		want: syncCycle{state: cycleHooks, key: volsync.CycleTrigger(now)},
	}, {
		name: "a cycle whose first hook runs goes on with it",
		runs: []v1alpha1.HookRun{run("checkpoint", recent, v1alpha1.HookRunning), run("flush", last, v1alpha1.HookSucceeded)},
		src:  volsync.Sources{Trigger: last},
		want: syncCycle{state: cycleHooks, key: volsync.CycleTrigger(recent)},
	}, {
		name: "a cycle whose hooks passed, one failed with Continue, is triggered",
		runs: []v1alpha1.HookRun{run("checkpoint", recent, v1alpha1.HookSucceeded), run("flush", recent, v1alpha1.HookContinued)},
		src:  volsync.Sources{Trigger: last},
		want: syncCycle{state: cycleTrigger, key: volsync.CycleTrigger(recent)},
	}, {
		name: "a hook failed with Fail holds the cycle for the rest of its interval",
		runs: []v1alpha1.HookRun{run("checkpoint", recent, v1alpha1.HookFailed), run("flush", last, v1alpha1.HookSucceeded)},
		src:  volsync.Sources{Trigger: last},
		want: syncCycle{state: cycleHeld, key: volsync.CycleTrigger(recent), due: recent.Add(interval)},
	}, {
		name: "after a held interval a new cycle runs the hooks again",
		runs: []v1alpha1.HookRun{run("checkpoint", last, v1alpha1.HookFailed)},
		src:  volsync.Sources{Trigger: last.Add(-interval)},
		want: syncCycle{state: cycleHooks, key: volsync.CycleTrigger(now)},
	}, {
		name: "runs of a relocation are no cycle's",
		runs: []v1alpha1.HookRun{{Name: "checkpoint", Action: "2026-12-08T00:59:00Z", Attempt: 1, Result: v1alpha1.HookSucceeded}},
		src:  volsync.Sources{Trigger: recent},
		want: syncCycle{state: cycleIdle, due: recent.Add(interval)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// The sources' trigger is a cycle's, so it counts in whole seconds.
			tc.src.Trigger = tc.src.Trigger.Truncate(time.Second)
			g.Expect(decideCycle(list, tc.runs, tc.src, interval, now)).To(Equal(tc.want))
		})
	}
}

func TestPassedCycleIsTheNewestCycleWhoseHooksAllPassed(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	group := &v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{Recipe: &v1alpha1.VRGRecipe{Name: "db",
		Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{{Name: "checkpoint", Point: v1alpha1.HookBeforeSync}}}}}}
	g.Expect(passedCycle(group)).To(BeEmpty(), "no cycle ran")
	group.Status.Hooks = []v1alpha1.HookRun{{Name: "checkpoint", Action: volsync.CycleTrigger(at), Attempt: 1, Result: v1alpha1.HookSucceeded}}
	g.Expect(passedCycle(group)).To(Equal(volsync.CycleTrigger(at)))
	group.Status.Hooks[0] = v1alpha1.HookRun{Name: "checkpoint", Action: volsync.CycleTrigger(at.Add(time.Minute)), Attempt: 1, Result: v1alpha1.HookFailed}
	g.Expect(passedCycle(group)).To(BeEmpty(), "the newest cycle failed: the sources keep the trigger they have")
	group.Status.Hooks[0].Result = v1alpha1.HookSucceeded
	group.Spec.Recipe.Action = at.Add(2 * time.Minute).Format(time.RFC3339)
	g.Expect(passedCycle(group)).To(BeEmpty(), "a cycle of the group's time as primary before its last action is not this one's")
	group.Spec.Recipe.Spec.Hooks[0].Point = v1alpha1.HookBeforeStop
	g.Expect(passedCycle(group)).To(BeEmpty(), "a recipe without BeforeSync hooks leaves VolSync its schedule")
}
