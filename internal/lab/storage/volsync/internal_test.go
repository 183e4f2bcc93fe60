package volsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// The lab source's trigger decisions are those of VolSync's state machine
// (backube/volsync internal/controller/statemachine/machine.go: currentState, shouldSync).
func TestVolSyncTriggerDecidesWhenASyncIsDue(t *testing.T) {
	every5 := "*/5 * * * *"
	now := time.Now()
	synced := statusTime(now.Add(-time.Second))
	for _, tc := range []struct {
		name      string
		trigger   *volsyncv1alpha1.TriggerSpec
		status    volsyncv1alpha1.ReplicationSourceStatus
		due       bool
		starts    bool
		reason    string
		nextAfter time.Time
	}{{
		name:    "a source that never synced syncs at once, whatever its trigger",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a"}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a"},
		due: true, starts: true,
	}, {
		name:    "a new manual trigger is due",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "b"}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a", LastSyncTime: synced},
		due: true, starts: true,
	}, {
		name:    "a manual trigger already served waits for the next one",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a"}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a", LastSyncTime: synced},
		reason: volsyncv1alpha1.SynchronizingReasonManual,
	}, {
		name:    "a manual trigger wins over a schedule",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a", Schedule: &every5}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a", LastSyncTime: synced},
		reason: volsyncv1alpha1.SynchronizingReasonManual,
	}, {
		name:    "a running sync goes on whatever the trigger says (lastSyncStartTime is set)",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a"},
		status:  volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a", LastSyncTime: synced, LastSyncStartTime: synced},
		due:     true,
	}, {
		name:    "a schedule that never synced is due at once",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		due:     true, starts: true,
	}, {
		name:    "a schedule waits for its next time after the last completion",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		status:  volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: statusTime(now)},
		reason:  volsyncv1alpha1.SynchronizingReasonSched, nextAfter: now,
	}, {
		name:    "a schedule whose slot passed is due at once",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		status:  volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: statusTime(now.Add(-6 * time.Minute))},
		due:     true, starts: true,
	}, {
		name:   "without a trigger the next sync starts as soon as the last one completed",
		status: volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: statusTime(now)},
		due:    true, starts: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rs := &volsyncv1alpha1.ReplicationSource{Spec: volsyncv1alpha1.ReplicationSourceSpec{Trigger: tc.trigger}}
			rs.Status = tc.status.DeepCopy()
			sc := &rsScope{rs: rs}
			if tc.trigger != nil && tc.trigger.Manual == "" && tc.trigger.Schedule != nil {
				schedule, err := cron.ParseStandard(*tc.trigger.Schedule)
				g.Expect(err).NotTo(HaveOccurred())
				sc.schedule = schedule
			}
			res, err := (&store{Store: &driver.Store{}}).awaitTrigger(context.Background(), sc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.IsZero()).To(Equal(tc.due), "due")
			g.Expect(sc.started).To(Equal(tc.starts), "a new sync starts")
			if tc.starts {
				g.Expect(rs.Status.LastSyncStartTime).NotTo(BeNil(), "a starting sync sets lastSyncStartTime")
				cond := meta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonSync))
			}
			if !tc.due {
				g.Expect(rs.Status.LastSyncStartTime).To(BeNil(), "no sync runs")
			}
			if tc.reason != "" {
				cond := meta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(tc.reason))
			}
			if !tc.nextAfter.IsZero() {
				g.Expect(rs.Status.NextSyncTime).NotTo(BeNil())
				g.Expect(rs.Status.NextSyncTime.Time).To(BeTemporally(">", tc.nextAfter))
				g.Expect(res.RequeueAfter).To(BeNumerically("<=", 5*time.Minute))
			}
		})
	}
}

// A completed sync is recorded as VolSync's transitionToCleaningUp records it.
func TestVolSyncCompletionRecordsTheTriggerCurrentAtTheEnd(t *testing.T) {
	every5 := "*/5 * * * *"
	start := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	end := start.Add(10 * time.Second)
	for _, tc := range []struct {
		name         string
		trigger      *volsyncv1alpha1.TriggerSpec
		running      bool
		wantManual   string
		wantDuration time.Duration
		wantNext     bool
	}{{
		name:    "a trigger changed while the sync ran is the one recorded",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "changed-during-the-sync"}, running: true,
		wantManual: "changed-during-the-sync", wantDuration: 10 * time.Second,
	}, {
		name: "without a trigger lastManualSync is cleared", running: true, wantDuration: 10 * time.Second,
	}, {
		name:    "a schedule sets the next sync from the completion",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5}, running: true,
		wantDuration: 10 * time.Second, wantNext: true,
	}, {
		name:    "a sync whose start was not stored runs from the transfer's start",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "b"}, wantManual: "b", wantDuration: 9 * time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rs := &volsyncv1alpha1.ReplicationSource{Spec: volsyncv1alpha1.ReplicationSourceSpec{Trigger: tc.trigger}}
			rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "served-before", NextSyncTime: statusTime(start)}
			if tc.running {
				rs.Status.LastSyncStartTime = statusTime(start)
			}
			var schedule cron.Schedule
			if tc.trigger != nil && tc.trigger.Schedule != nil {
				var err error
				schedule, err = cron.ParseStandard(*tc.trigger.Schedule)
				g.Expect(err).NotTo(HaveOccurred())
			}
			completeSync(rs, schedule, start.Add(time.Second), end)
			st := rs.Status
			g.Expect(st.LastManualSync).To(Equal(tc.wantManual))
			g.Expect(st.LastSyncStartTime).To(BeNil(), "lastSyncStartTime is cleared when a sync completes")
			g.Expect(st.LastSyncTime).To(Equal(statusTime(end)), "lastSyncTime is the completion")
			g.Expect(st.LastSyncDuration.Duration).To(Equal(tc.wantDuration))
			if tc.wantNext {
				g.Expect(st.NextSyncTime).To(Equal(statusTime(schedule.Next(end))))
			} else {
				g.Expect(st.NextSyncTime).To(BeNil())
			}
		})
	}
}

func TestVolSyncDestinationTakesTheOldestCompletedTransferFirst(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	now := time.Now()
	put := func(name string, t *transfer, a *ack) {
		d := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Join(d, dataDirName), 0o750)).To(Succeed())
		if t != nil {
			g.Expect(driver.WriteJSON(filepath.Join(d, transferFile), t)).To(Succeed())
		}
		if a != nil {
			g.Expect(driver.WriteJSON(filepath.Join(d, ackFile), a)).To(Succeed())
		}
	}
	put("being-copied", nil, nil)
	put("acknowledged", &transfer{StartTime: now.Add(-time.Hour)}, &ack{Time: now})
	put("stale-ack", &transfer{StartTime: now.Add(-2 * time.Hour)}, &ack{Time: now.Add(-time.Hour)})
	put("newer", &transfer{StartTime: now, Source: "newer"}, nil)
	put("older", &transfer{StartTime: now.Add(-time.Minute), Source: "older"}, nil)

	got, gotDir, _, err := nextTransfer(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).NotTo(BeNil())
	g.Expect(got.Source).To(Equal("older"))
	g.Expect(gotDir).To(Equal(filepath.Join(dir, "older")))
	g.Expect(filepath.Join(dir, "stale-ack")).NotTo(BeADirectory(), "an acknowledged transfer nobody collected is removed")
	g.Expect(filepath.Join(dir, "acknowledged")).To(BeADirectory())
	g.Expect(filepath.Join(dir, "being-copied")).To(BeADirectory(), "a copy in progress is its source's")

	none, _, _, err := nextTransfer(filepath.Join(dir, "missing"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(BeNil())
	g.Expect(validAddress("volsync-db.ns.lab")).To(Succeed())
	g.Expect(validAddress("../../etc")).NotTo(Succeed())
	g.Expect(validAddress("a/b")).NotTo(Succeed())
}
