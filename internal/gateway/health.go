package gateway

import (
	"sync"
	"time"
)

// Health remembers, per cluster, since when its probe has been failing, so that a short outage
// (an API server restarting) does not flip Reachable to False. It is the one piece of state the
// hub keeps in memory; a restarted hub starts the grace period afresh, which only delays the
// condition.
type Health struct {
	mu      sync.Mutex
	failing map[string]time.Time
}

// Observe records the outcome of one probe of the cluster at now and returns since when it has
// been failing (zero when it succeeded).
func (h *Health) Observe(cluster string, err error, now time.Time) (failingSince time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing == nil {
		h.failing = map[string]time.Time{}
	}
	if err == nil {
		delete(h.failing, cluster)
		return time.Time{}
	}
	since, ok := h.failing[cluster]
	if !ok {
		since = now
		h.failing[cluster] = now
	}
	return since
}
