package objectstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SealMetrics count what sealing and opening the envelopes costs the process, by S3 profile:
// the time spent in Seal and Open, the objects and the bytes handed to them (a body to seal, an
// envelope to open, whether it opens or not). The time is wall time inside the calls: on a
// machine whose cores are all busy it includes the time the thread waited for one, so it bounds
// the CPU sealing used from above. Labels: profile; the constant labels given (an agent's
// cluster).
type SealMetrics struct {
	sealSeconds, sealedBytes, sealedObjects *prometheus.CounterVec
	openSeconds, openedBytes, openedObjects *prometheus.CounterVec
	// now is the clock the calls are timed with.
	now func() time.Time
}

var _ prometheus.Collector = (*SealMetrics)(nil)

// NewSealMetrics returns the sealing metrics, each with constLabels.
func NewSealMetrics(constLabels prometheus.Labels) *SealMetrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: constLabels}, []string{"profile"})
	}
	return &SealMetrics{
		sealSeconds:   counter("drover_store_seal_seconds_total", "Seconds spent sealing objects for an S3 profile (AES-256-GCM envelopes; wall time inside the calls)."),
		sealedBytes:   counter("drover_store_sealed_bytes_total", "Bytes of the objects sealed for an S3 profile, before sealing."),
		sealedObjects: counter("drover_store_sealed_objects_total", "Objects sealed for an S3 profile."),
		openSeconds:   counter("drover_store_open_seconds_total", "Seconds spent opening the envelopes read from an S3 profile (wall time inside the calls, refused ones included)."),
		openedBytes:   counter("drover_store_opened_bytes_total", "Bytes of the envelopes read from an S3 profile and opened (or refused)."),
		openedObjects: counter("drover_store_opened_objects_total", "Envelopes read from an S3 profile and opened (or refused)."),
		now:           time.Now,
	}
}

func (m *SealMetrics) vecs() []*prometheus.CounterVec {
	return []*prometheus.CounterVec{m.sealSeconds, m.sealedBytes, m.sealedObjects, m.openSeconds, m.openedBytes, m.openedObjects}
}

// Describe implements prometheus.Collector.
func (m *SealMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.vecs() {
		v.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *SealMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, v := range m.vecs() {
		v.Collect(ch)
	}
}

// Sealed is objectstore.Sealed with the store's sealing and opening counted in m under its
// profile's name; a nil m counts nothing. The counters are looked up once here, so a call adds
// two clock readings and three additions to the sealing.
func (m *SealMetrics) Sealed(store Store, keys Keyring) Store {
	s := &sealedStore{Store: store, keys: keys}
	if m != nil {
		profile := store.Name()
		s.counters = &sealCounters{
			now:  m.now,
			seal: opCounters{m.sealSeconds.WithLabelValues(profile), m.sealedBytes.WithLabelValues(profile), m.sealedObjects.WithLabelValues(profile)},
			open: opCounters{m.openSeconds.WithLabelValues(profile), m.openedBytes.WithLabelValues(profile), m.openedObjects.WithLabelValues(profile)},
		}
	}
	return s
}

// sealCounters are one store's counters.
type sealCounters struct {
	now        func() time.Time
	seal, open opCounters
}

// opCounters count one operation: its seconds, bytes and calls.
type opCounters struct {
	seconds, bytes, calls prometheus.Counter
}

func (c opCounters) add(d time.Duration, n int) {
	c.seconds.Add(d.Seconds())
	c.bytes.Add(float64(n))
	c.calls.Inc()
}
