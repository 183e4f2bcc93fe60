package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// While settled, the benchmark samples every settlePoll the run's DRPlacementControls on the hub
// and the VolumeReplications of their namespaces on the primary: whether each DRPC stays
// Protected, and how far its lastGroupSyncTime trails the storage's own last sync of the group
// (the oldest lastSyncTime of its VolumeReplications: what the group's sync time reports when
// drover keeps up). A value's lag is from the sample that first showed it on the storage to the
// first that showed the DRPC at it or later; sampling makes each figure good to ±settlePoll.
const settlePoll = 500 * time.Millisecond

// settleLagGrace: a storage sync first seen less than this before the window's end, and not shown
// by the DRPC yet, is too recent to judge; an older one counts with its lag so far.
const settleLagGrace = 2 * time.Second

// volumeReplicationList is the list kind of csi-addons' VolumeReplication, read unstructured (the
// story's clients know drover's and client-go's types only).
var volumeReplicationList = schema.GroupVersionKind{Group: "replication.storage.openshift.io", Version: "v1alpha1", Kind: "VolumeReplicationList"}

// syncSampler holds what the samples saw, by the DRPC's namespace (one application each).
type syncSampler struct {
	// storage and drpc map a namespace to each sync time seen (Unix seconds, the API's
	// resolution) and when it was first seen.
	storage, drpc map[string]map[int64]time.Time
	// leftProtected are the DRPCs seen with Protected not True, with the first reason.
	leftProtected map[string]string
	// first is when the first sample was taken.
	first time.Time
}

func newSyncSampler() *syncSampler {
	return &syncSampler{storage: map[string]map[int64]time.Time{}, drpc: map[string]map[int64]time.Time{}, leftProtected: map[string]string{}}
}

// sample reads the DRPCs selected on the hub and the VolumeReplications on the primary once.
func (s *syncSampler) sample(ctx context.Context, hub, primary client.Client, selector map[string]string) error {
	drpcs := &v1alpha1.DRPlacementControlList{}
	if err := hub.List(ctx, drpcs, client.MatchingLabels(selector)); err != nil {
		return fmt.Errorf("failed to list the DRPlacementControls: %w", err)
	}
	vrs := &unstructured.UnstructuredList{}
	vrs.SetGroupVersionKind(volumeReplicationList)
	if err := primary.List(ctx, vrs); err != nil {
		return fmt.Errorf("failed to list the VolumeReplications: %w", err)
	}
	now := time.Now()
	if s.first.IsZero() {
		s.first = now
	}
	storage := groupSyncTimes(vrs.Items)
	for i := range drpcs.Items {
		d := &drpcs.Items[i]
		if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionProtected); c == nil || c.Status != metav1.ConditionTrue {
			if _, seen := s.leftProtected[d.Namespace]; !seen {
				s.leftProtected[d.Namespace] = reasonOf(c)
			}
		}
		if d.Status.LastGroupSyncTime != nil {
			firstSeen(s.drpc, d.Namespace, d.Status.LastGroupSyncTime.Unix(), now)
		}
		if t, ok := storage[d.Namespace]; ok {
			firstSeen(s.storage, d.Namespace, t, now)
		}
	}
	return nil
}

func reasonOf(c *metav1.Condition) string {
	if c == nil {
		return "no Protected condition"
	}
	return c.Reason + ": " + c.Message
}

// groupSyncTimes is, per namespace, the oldest lastSyncTime of its VolumeReplications (Unix
// seconds); a namespace with one that has not synced yet has none.
func groupSyncTimes(vrs []unstructured.Unstructured) map[string]int64 {
	out, unsynced := map[string]int64{}, map[string]bool{}
	for i := range vrs {
		ns := vrs[i].GetNamespace()
		s, _, _ := unstructured.NestedString(vrs[i].Object, "status", "lastSyncTime")
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			unsynced[ns] = true
			continue
		}
		if old, ok := out[ns]; !ok || t.Unix() < old {
			out[ns] = t.Unix()
		}
	}
	for ns := range unsynced {
		delete(out, ns)
	}
	return out
}

func firstSeen(m map[string]map[int64]time.Time, ns string, v int64, now time.Time) {
	if m[ns] == nil {
		m[ns] = map[int64]time.Time{}
	}
	if _, ok := m[ns][v]; !ok {
		m[ns][v] = now
	}
}

// lags are the DRPCs' lags behind their storage over the samples until end: one per sync of the
// storage first seen after the first sample (the values present at the start appeared
// earlier), from its first sight to the first sight of the DRPC at it or later (0 when the DRPC
// showed it first, between two samples). A sync not shown by end counts with its lag so far,
// unless it is younger than settleLagGrace.
func (s *syncSampler) lags(end time.Time) []time.Duration {
	var out []time.Duration
	for ns, values := range s.storage {
		for v, seen := range values {
			if !seen.After(s.first) {
				continue
			}
			shown, ok := firstAtOrAfter(s.drpc[ns], v)
			switch {
			case ok:
				out = append(out, max(shown.Sub(seen), 0))
			case end.Sub(seen) >= settleLagGrace:
				out = append(out, end.Sub(seen))
			}
		}
	}
	slices.Sort(out)
	return out
}

// storageGaps are the intervals between consecutive syncs of each application's storage seen
// while settled (from the sync times themselves, to the second): whether the storage kept the
// policy's interval, which Protected measures the DRPCs against.
func (s *syncSampler) storageGaps() []time.Duration {
	var out []time.Duration
	for _, values := range s.storage {
		times := slices.Sorted(maps.Keys(values))
		for i := 1; i < len(times); i++ {
			out = append(out, time.Duration(times[i]-times[i-1])*time.Second)
		}
	}
	slices.Sort(out)
	return out
}

// firstAtOrAfter is when the DRPC was first seen at v or a later sync time.
func firstAtOrAfter(seen map[int64]time.Time, v int64) (time.Time, bool) {
	var first time.Time
	for w, at := range seen {
		if w >= v && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// nearestRank is the q-th quantile (0-1) of sorted durations, nearest rank; 0 for none.
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
