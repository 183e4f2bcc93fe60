package bench

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/quantile"
)

func vr(ns, lastSync string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": ns, "name": "data"}}}
	if lastSync != "" {
		u.Object["status"] = map[string]any{"lastSyncTime": lastSync}
	}
	return u
}

func TestAGroupsStorageSyncIsItsOldestVolumesAndNoneWhileOneHasNotSynced(t *testing.T) {
	got := groupSyncTimes([]unstructured.Unstructured{
		vr("a", "2026-12-01T10:00:05Z"), vr("a", "2026-12-01T10:00:03Z"),
		vr("b", "2026-12-01T10:00:05Z"), vr("b", ""),
	})
	want := time.Date(2026, 12, 1, 10, 0, 3, 0, time.UTC).Unix()
	if len(got) != 1 || got["a"] != want {
		t.Errorf("groupSyncTimes = %v, want only a at %d", got, want)
	}
}

func TestTheLagOfEachStorageSyncIsUntilTheDRPCFirstShowsItOrALaterOne(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := newSyncSampler()
	s.first = at(0)
	s.storage["a"] = map[int64]time.Time{
		100: at(0),     // present at the first sample: not counted
		105: at(5000),  // the DRPC shows 105 at 5.5 s: 0.5 s
		110: at(10000), // the DRPC skips to 115 at 16 s: 6 s
		115: at(15000), // shown at 16 s: 1 s
		120: at(19000), // not shown, 1 s before the end: too recent
	}
	s.drpc["a"] = map[int64]time.Time{100: at(0), 105: at(5500), 115: at(16000)}
	s.storage["b"] = map[int64]time.Time{200: at(3000)} // never shown: 17 s so far
	s.drpc["b"] = map[int64]time.Time{195: at(0)}
	s.storage["c"] = map[int64]time.Time{300: at(8000)} // the DRPC showed it first, between samples
	s.drpc["c"] = map[int64]time.Time{300: at(7500)}

	got := s.lags(at(20000))
	want := []time.Duration{0, 500 * time.Millisecond, time.Second, 6 * time.Second, 17 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("lags = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("lags = %v, want %v", got, want)
		}
	}
	if p50, p99 := quantile.NearestRank(got, 0.5), quantile.NearestRank(got, 0.99); p50 != time.Second || p99 != 17*time.Second {
		t.Errorf("p50 %s, p99 %s; want 1s, 17s", p50, p99)
	}
}

func TestTheStoragesGapsAreBetweenItsConsecutiveSyncs(t *testing.T) {
	s := newSyncSampler()
	now := time.Now()
	s.storage["a"] = map[int64]time.Time{100: now, 105: now, 117: now}
	s.storage["b"] = map[int64]time.Time{200: now, 206: now}
	s.storage["other"] = map[int64]time.Time{300: now, 330: now} // no DRPC of the run there
	s.drpc["a"], s.drpc["b"] = map[int64]time.Time{}, map[int64]time.Time{}
	got := s.storageGaps()
	want := []time.Duration{5 * time.Second, 6 * time.Second, 12 * time.Second}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("storageGaps = %v, want %v", got, want)
	}
}

func TestEveryVersionOfADRPCIsSeenAndTheFirstListIsDatedAtTheStart(t *testing.T) {
	s := newSyncSampler()
	s.first = time.Now().Add(-time.Minute)
	drpc := func(sync int64, protected metav1.ConditionStatus) *v1alpha1.DRPlacementControl {
		d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db"}}
		d.Status.LastGroupSyncTime = &metav1.Time{Time: time.Unix(sync, 0)}
		d.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionProtected, Status: protected, Reason: "SyncStale", Message: "late"}}
		return d
	}
	s.sawDRPC(drpc(100, metav1.ConditionTrue), true)
	s.sawDRPC(drpc(105, metav1.ConditionFalse), false)
	s.sawDRPC(drpc(110, metav1.ConditionTrue), false)
	if got := s.drpc["a"][100]; !got.Equal(s.first) {
		t.Errorf("a value of the first list is dated %s, want the start %s", got, s.first)
	}
	if got := s.drpc["a"][105]; !got.After(s.first) {
		t.Errorf("a later value is dated %s, not after the start", got)
	}
	if got := s.leftProtected["a"]; got != "SyncStale: late" {
		t.Errorf("leftProtected = %q, want the flap between two versions", got)
	}
}
