package volsync

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// Sync cycles (docs/decisions/0019-before-sync-hooks-drive-volsync.md). A group whose recipe has
// BeforeSync hooks does not let VolSync sync on its cron schedule: the agent runs the hooks once
// per scheduling interval and only then sets spec.trigger.manual of the group's sources to the
// cycle's trigger, CycleTrigger of the instant the cycle began. That trigger is also the action
// the cycle's hook runs are recorded under (v1alpha1.HookRun.Action), so the runs say which
// sync they preceded. VolSync starts a sync when spec.trigger.manual differs from
// status.lastManualSync and none while they are equal: a source whose lastManualSync equals its
// trigger is idle until the next cycle, so the next sync can only start after the next cycle's
// hooks passed.

// cyclePrefix begins every sync cycle's trigger; the final sync's triggers (finalsync.go) never
// do.
const cyclePrefix = "drover-sync-"

// cycleLayout is the instant in a cycle's trigger: UTC, whole seconds, no colon.
const cycleLayout = "20060102T150405Z"

// CycleTrigger is the manual trigger, and the hook runs' action, of the sync cycle begun at.
func CycleTrigger(at time.Time) string { return cyclePrefix + at.UTC().Format(cycleLayout) }

// CycleTime is the instant a sync cycle's trigger names; false when s is no cycle's trigger.
func CycleTime(s string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(s, cyclePrefix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(cycleLayout, rest)
	return t, err == nil
}

// ManualSyncs reports whether the group's sources are driven by sync cycles: its recipe has a
// BeforeSync hook.
func ManualSyncs(vrg *v1alpha1.VolumeReplicationGroup) bool {
	rc := vrg.Spec.Recipe
	if rc == nil {
		return false
	}
	for i := range rc.Spec.Hooks {
		if rc.Spec.Hooks[i].Point == v1alpha1.HookBeforeSync {
			return true
		}
	}
	return false
}

// cycleTrigger is the trigger a source of a group driven by sync cycles carries: the newest
// cycle whose hooks passed (pc.SyncTrigger), else the one it has (before the first cycle passed,
// the schedule it had). It never goes back to an older cycle than the source carries: the
// group read from a cache may not show the cycle triggered in the pass before, and an older
// trigger would ask VolSync for one more sync, before any hook. A source that does not exist
// yet and has no cycle is not made: its first sync would run before any hook (nil, the Result
// that says so).
func (b *Backend) cycleTrigger(ctx context.Context, pc *replication.PVCContext) (*volsyncv1alpha1.TriggerSpec, replication.Result) {
	key := client.ObjectKey{Namespace: pc.PVC.Namespace, Name: sourceName(pc.PVC)}
	rs := &volsyncv1alpha1.ReplicationSource{}
	err := b.client.Get(ctx, key, rs)
	if client.IgnoreNotFound(err) != nil {
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get ReplicationSource %s: %v", key, err))
	}
	exists := err == nil
	if want := pc.SyncTrigger; want != "" && (!exists || !newerCycle(rs.Spec.Trigger, want)) {
		return &volsyncv1alpha1.TriggerSpec{Manual: want}, replication.Done()
	}
	if exists {
		return rs.Spec.Trigger.DeepCopy(), replication.Done()
	}
	return nil, replication.Retry(waitForHub, v1alpha1.ReasonHookRunning, fmt.Sprintf(
		"PVC %s/%s waits for its first sync until the group's BeforeSync hooks have passed", pc.PVC.Namespace, pc.PVC.Name))
}

// newerCycle reports whether trigger is a sync cycle's, later than the cycle want.
func newerCycle(trigger *volsyncv1alpha1.TriggerSpec, want string) bool {
	if trigger == nil || trigger.Schedule != nil {
		return false
	}
	have, ok := CycleTime(trigger.Manual)
	asked, _ := CycleTime(want)
	return ok && have.After(asked)
}

// Sources is what a group's ReplicationSources say of its sync cycles.
type Sources struct {
	// Trigger is the newest cycle trigger a source carries; zero when none carries one.
	Trigger time.Time
	// Syncing names a source whose manual trigger its last completed sync does not match yet:
	// a sync asked and not completed.
	Syncing string
}

// ObserveSources reads the ReplicationSources of the PVCs (namespace/name keys of the PVCs the
// sources are named after).
func (b *Backend) ObserveSources(ctx context.Context, pcs []*replication.PVCContext) (Sources, error) {
	var out Sources
	for _, pc := range pcs {
		key := client.ObjectKey{Namespace: pc.PVC.Namespace, Name: sourceName(pc.PVC)}
		rs := &volsyncv1alpha1.ReplicationSource{}
		if err := b.client.Get(ctx, key, rs); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return Sources{}, fmt.Errorf("failed to get ReplicationSource %s: %w", key, err)
		}
		t := rs.Spec.Trigger
		if t == nil || t.Manual == "" || t.Schedule != nil {
			continue
		}
		if at, ok := CycleTime(t.Manual); ok && at.After(out.Trigger) {
			out.Trigger = at
		}
		if rs.Status == nil || rs.Status.LastManualSync != t.Manual {
			out.Syncing = key.String()
		}
	}
	return out, nil
}
