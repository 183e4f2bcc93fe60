package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// While settled, the benchmark watches the run's DRPlacementControls on the hub and the
// VolumeReplications on the primary: whether each DRPC stays Protected (every version of its
// status is seen, so a short flap counts), and how far its lastGroupSyncTime trails the
// storage's own last sync of the group (the oldest lastSyncTime of its VolumeReplications: what
// the group's sync time reports when drover keeps up). A value's lag is from the event that
// first showed it on the storage to the first that showed the DRPC at it or later. (It polled
// both every half second before: full lists of 100 DRPCs and 100 VolumeReplications cost the
// API servers, on two cores, more than drover's own settled work and skewed what it measured.)

// settleLagGrace: a storage sync first seen less than this before the window's end, and not shown
// by the DRPC yet, is too recent to judge; an older one counts with its lag so far.
const settleLagGrace = 2 * time.Second

// volumeReplicationGVK is csi-addons' VolumeReplication, read unstructured (the story's clients
// know drover's and client-go's types only).
var volumeReplicationGVK = schema.GroupVersionKind{Group: "replication.storage.openshift.io", Version: "v1alpha1", Kind: "VolumeReplication"}

// syncSampler holds what the watches saw, by the DRPC's namespace (one application each).
type syncSampler struct {
	mu sync.Mutex
	// storage and drpc map a namespace to each sync time seen (Unix seconds, the API's
	// resolution) and when it was first seen.
	storage, drpc map[string]map[int64]time.Time
	// leftProtected are the DRPCs seen with Protected not True, with the first reason.
	leftProtected map[string]string
	// first is when the watches began: what they list first is dated then, not counted as new.
	first time.Time
}

func newSyncSampler() *syncSampler {
	return &syncSampler{storage: map[string]map[int64]time.Time{}, drpc: map[string]map[int64]time.Time{}, leftProtected: map[string]string{}}
}

// watch records every change of the selected DRPlacementControls on the hub and of the
// VolumeReplications of their namespaces on the primary until end.
func (s *syncSampler) watch(parent context.Context, hub, primary *rest.Config, selector map[string]string, end time.Time) error {
	ctx, cancel := context.WithDeadline(parent, end)
	defer cancel()
	s.first = time.Now()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	hubCache, err := cache.New(hub, cache.Options{Scheme: scheme, DefaultLabelSelector: labels.SelectorFromSet(selector)})
	if err != nil {
		return fmt.Errorf("failed to watch the hub: %w", err)
	}
	primaryCache, err := cache.New(primary, cache.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		return fmt.Errorf("failed to watch the primary: %w", err)
	}
	vr := &unstructured.Unstructured{}
	vr.SetGroupVersionKind(volumeReplicationGVK)
	handlers := []struct {
		c   cache.Cache
		obj client.Object
		h   func(obj any, initial bool)
	}{
		{hubCache, &v1alpha1.DRPlacementControl{}, s.sawDRPC},
		{primaryCache, vr, func(obj any, initial bool) { s.sawVolumeReplication(ctx, primaryCache, obj, initial) }},
	}
	for _, w := range handlers {
		inf, err := w.c.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("failed to watch %T: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    w.h,
			UpdateFunc: func(_, obj any) { w.h(obj, false) },
		}); err != nil {
			return err
		}
	}
	errs := make(chan error, 2)
	for _, c := range []cache.Cache{hubCache, primaryCache} {
		go func() { errs <- c.Start(ctx) }()
	}
	for range 2 {
		// A cache's Start returns when the window ends, or at once when it cannot watch.
		if err := <-errs; err != nil && ctx.Err() == nil {
			return fmt.Errorf("a watch ended: %w", err)
		}
	}
	return parent.Err()
}

// seenAt is when a value is first seen: the start for what the watch listed first.
func (s *syncSampler) seenAt(initial bool) time.Time {
	if initial {
		return s.first
	}
	return time.Now()
}

// sawDRPC records one version of a DRPlacementControl.
func (s *syncSampler) sawDRPC(obj any, initial bool) {
	d, ok := obj.(*v1alpha1.DRPlacementControl)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drpc[d.Namespace] == nil {
		s.drpc[d.Namespace] = map[int64]time.Time{} // an application of the run
	}
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionProtected); c == nil || c.Status != metav1.ConditionTrue {
		if _, seen := s.leftProtected[d.Namespace]; !seen {
			s.leftProtected[d.Namespace] = reasonOf(c)
		}
	}
	if d.Status.LastGroupSyncTime != nil {
		firstSeen(s.drpc, d.Namespace, d.Status.LastGroupSyncTime.Unix(), s.seenAt(initial))
	}
}

// sawVolumeReplication records the group sync time of the namespace of a VolumeReplication that
// changed, from every VolumeReplication of that namespace the watch holds.
func (s *syncSampler) sawVolumeReplication(ctx context.Context, c cache.Cache, obj any, initial bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(volumeReplicationGVK.GroupVersion().WithKind(volumeReplicationGVK.Kind + "List"))
	if err := c.List(ctx, list, client.InNamespace(u.GetNamespace())); err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := groupSyncTimes(list.Items)[u.GetNamespace()]; ok {
		firstSeen(s.storage, u.GetNamespace(), t, s.seenAt(initial))
	}
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
		if s.drpc[ns] == nil {
			continue // not an application of the run
		}
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
	for ns, values := range s.storage {
		if s.drpc[ns] == nil {
			continue
		}
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
