package storage

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
)

func TestVolSyncTriggerDecidesWhenASyncIsDue(t *testing.T) {
	every5 := "*/5 * * * *"
	now := time.Now()
	for _, tc := range []struct {
		name      string
		trigger   *volsyncv1alpha1.TriggerSpec
		status    volsyncv1alpha1.ReplicationSourceStatus
		due       bool
		reason    string
		serves    string
		nextAfter time.Time
	}{{
		name:    "a new manual trigger is due",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "b"}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a"},
		due: true, serves: "b",
	}, {
		name:    "a manual trigger already served waits for the next one",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a"}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a"},
		reason: volsyncv1alpha1.SynchronizingReasonManual,
	}, {
		name:    "a manual trigger wins over a schedule",
		trigger: &volsyncv1alpha1.TriggerSpec{Manual: "a", Schedule: &every5}, status: volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: "a"},
		reason: volsyncv1alpha1.SynchronizingReasonManual,
	}, {
		name:    "a schedule that never synced is due at once",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		due:     true,
	}, {
		name:    "a schedule waits for its next time after the last start",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		status:  volsyncv1alpha1.ReplicationSourceStatus{LastSyncStartTime: statusTime(now)},
		reason:  volsyncv1alpha1.SynchronizingReasonSched, nextAfter: now,
	}, {
		name:    "a schedule whose slot passed is due at once",
		trigger: &volsyncv1alpha1.TriggerSpec{Schedule: &every5},
		status:  volsyncv1alpha1.ReplicationSourceStatus{LastSyncStartTime: statusTime(now.Add(-6 * time.Minute))},
		due:     true,
	}, {
		name: "without a trigger a sync is always due",
		due:  true,
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
			res, err := (&store{}).awaitTrigger(context.Background(), sc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.IsZero()).To(Equal(tc.due), "due")
			g.Expect(sc.manual).To(Equal(tc.serves))
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

func TestVolSyncDestinationTakesTheOldestCompletedTransferFirst(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	now := time.Now()
	put := func(name string, t *transfer, a *ack) {
		d := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Join(d, dataDirName), 0o750)).To(Succeed())
		if t != nil {
			g.Expect(writeJSON(filepath.Join(d, transferFile), t)).To(Succeed())
		}
		if a != nil {
			g.Expect(writeJSON(filepath.Join(d, ackFile), a)).To(Succeed())
		}
	}
	put("being-copied", nil, nil)
	put("acknowledged", &transfer{StartTime: now.Add(-time.Hour)}, &ack{Time: now})
	put("stale-ack", &transfer{StartTime: now.Add(-2 * time.Hour)}, &ack{Time: now.Add(-time.Hour)})
	put("newer", &transfer{StartTime: now, Source: "newer"}, nil)
	put("older", &transfer{StartTime: now.Add(-time.Minute), Source: "older"}, nil)

	got, gotDir, err := nextTransfer(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).NotTo(BeNil())
	g.Expect(got.Source).To(Equal("older"))
	g.Expect(gotDir).To(Equal(filepath.Join(dir, "older")))
	g.Expect(filepath.Join(dir, "stale-ack")).NotTo(BeADirectory(), "an acknowledged transfer nobody collected is removed")
	g.Expect(filepath.Join(dir, "acknowledged")).To(BeADirectory())
	g.Expect(filepath.Join(dir, "being-copied")).To(BeADirectory(), "a copy in progress is its source's")

	none, _, err := nextTransfer(filepath.Join(dir, "missing"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(BeNil())
	g.Expect(validAddress("volsync-db.ns.lab")).To(Succeed())
	g.Expect(validAddress("../../etc")).NotTo(Succeed())
	g.Expect(validAddress("a/b")).NotTo(Succeed())
}
