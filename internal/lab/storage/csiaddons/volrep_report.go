package csiaddons

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// When the csi-addons controller reports: the storage (ceph-csi with rbd-mirror) mirrors on its
// own schedule, and a VolumeReplication's status says only what csi-addons read at its last
// reconcile (csi-addons/kubernetes-csi-addons d4d7fea4,
// internal/controller/replication.storage/volumereplication_controller.go):
//
//   - it reconciles a VolumeReplication when its generation changes (GenerationChangedPredicate:
//     a status or metadata change does not count) and when a requeue it asked for is due;
//   - a primary is requeued every getInfoReconcileInterval of its class's schedulingInterval
//     (InfoReconcileInterval): its lastSyncTime is refreshed only then, so it can be that much
//     older than the storage's last mirror, on top of the interval itself;
//   - a secondary is requeued 15 s after its first demotion (defaultRequeueForVGResources) and
//     after an error (a failed resync), 30 s while ceph-csi says its resync is not ready, which
//     for a secondary of a live primary is always (ceph-csi reports it ready only when both
//     sites are up+unknown: both demoted); a ready secondary is not requeued at all.
//
// The lab's storage controller keeps mirroring at the storage's own pace (its reconciles run
// whenever a mirror is due) and writes a status only when csi-addons would: reportSchedule
// remembers, per VolumeReplication, when csi-addons would reconcile it next. The schedule lives
// in memory, as csi-addons' work queue does: a restarted storage controller reconciles every
// VolumeReplication once, as a restarted csi-addons does.

const (
	// csiAddonsDefaultInfoInterval is csi-addons' defaultScheduleTime: a primary's refresh when
	// its class has no schedulingInterval or one time.ParseDuration cannot read.
	csiAddonsDefaultInfoInterval = time.Hour
	// csiAddonsDemotedRequeue is defaultRequeueForVGResources: the requeue after a first
	// demotion and after an error of a secondary.
	csiAddonsDemotedRequeue = 15 * time.Second
	// csiAddonsResyncRequeue is the requeue while a secondary's resync is not ready.
	csiAddonsResyncRequeue = 30 * time.Second
)

// InfoReconcileInterval is how often csi-addons refreshes a primary VolumeReplication's status
// for its class's schedulingInterval parameter raw, as csi-addons' getInfoReconcileInterval
// computes it: the interval itself below 2 minutes, half of it from 2 minutes on, and an hour
// when the parameter is missing or not a Go duration. ceph-csi's day form ("1d") is not one
// (time.ParseDuration knows no days), so a daily class is refreshed hourly.
func InfoReconcileInterval(raw string) time.Duration {
	if raw == "" {
		return csiAddonsDefaultInfoInterval
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		return csiAddonsDefaultInfoInterval
	}
	if d < 2*time.Minute {
		return d
	}
	return d / 2
}

// secondaryRequeue is one of csi-addons' fixed secondary requeues (15 s, 30 s) for a class of
// interval. A class interval below a minute is a form ceph-csi refuses, which exists only for
// the lab's speed; for it the requeue is shortened to the interval, so that the lab's fast
// tests keep their pace. Every class ceph-csi accepts gets csi-addons' own requeues.
func secondaryRequeue(d, interval time.Duration) time.Duration {
	if interval < time.Minute {
		return min(d, interval)
	}
	return d
}

// reportSchedule is, per VolumeReplication, when csi-addons reconciles it next and the
// generation it last reported.
type reportSchedule struct {
	mu      sync.Mutex
	entries map[types.UID]reportEntry
}

type reportEntry struct {
	// next is the requeue asked for; zero for none.
	next time.Time
	// generation is the generation of the last report. The storage controller reconciles on
	// every event, some of them from a cache that has not seen its last status yet, so the
	// generation it reported is remembered here, not read back from status.observedGeneration.
	generation int64
}

// due reports whether csi-addons reconciles the VolumeReplication of generation now: the
// generation changed since its last report, or the requeue it asked for is due (byTimer). One
// never reconciled since this controller started is due at once, as csi-addons reconciles
// every object when it starts.
func (r *reportSchedule) due(uid types.UID, generation int64, now time.Time) (due, byTimer bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[uid]
	if !ok {
		return true, true
	}
	byTimer = !e.next.IsZero() && !now.Before(e.next)
	return byTimer || generation > e.generation, byTimer
}

// reported records a report of generation and the requeue it asked for (after 0: none). A
// report that a generation change caused does not postpone an earlier requeue already asked
// for: the work queue keeps the earliest.
func (r *reportSchedule) reported(uid types.UID, generation int64, byTimer bool, now time.Time, after time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = map[types.UID]reportEntry{}
	}
	at := time.Time{}
	if after > 0 {
		at = now.Add(after)
	}
	prev, ok := r.entries[uid]
	if ok && !byTimer && !prev.next.IsZero() && (at.IsZero() || prev.next.Before(at)) {
		at = prev.next
	}
	r.entries[uid] = reportEntry{next: at, generation: max(generation, prev.generation)}
}

// until is how long until the VolumeReplication's next report; false when none is asked for.
func (r *reportSchedule) until(uid types.UID, now time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[uid]
	if !ok || e.next.IsZero() {
		return 0, false
	}
	return max(e.next.Sub(now), 0), true
}

// forget drops a VolumeReplication that is gone.
func (r *reportSchedule) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, uid)
}
