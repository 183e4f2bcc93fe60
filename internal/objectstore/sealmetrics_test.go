package objectstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/drover-io/drover/internal/objectstore"
)

// tickingClock advances by step at every reading, so each timed call lasts exactly step.
func tickingClock(step time.Duration) func() time.Time {
	now := time.Unix(0, 0)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// sealFigures reads the sealing counters of one profile from a registry.
func sealFigures(t *testing.T, reg *prometheus.Registry, profile string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if labelOf(m, "profile") == profile && labelOf(m, "cluster") == "east" {
				out[f.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestSealMetricsCountTheTimeObjectsAndBytesOfEachSealAndOpenByProfile(t *testing.T) {
	ctx := context.Background()
	m := objectstore.NewSealMetrics(prometheus.Labels{"cluster": "east"})
	objectstore.SetSealClock(m, tickingClock(time.Millisecond))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	keys := testKeyring(t, "k1", testKey("k1", 1))
	rawEast, rawWest := objectstore.NewFake("s3-east"), objectstore.NewFake("s3-west")
	east, west := m.Sealed(rawEast, keys), m.Sealed(rawWest, keys)

	// Three seals of 10, 20 and 5 bytes on east, one of 7 on west.
	for key, body := range map[string]string{"g/db/a.json": "0123456789", "g/db/b.json": "01234567890123456789"} {
		if err := east.Put(ctx, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := east.PutIf(ctx, "g/db/primary.json", []byte("epoch"), ""); err != nil {
		t.Fatal(err)
	}
	if err := west.Put(ctx, "g/db/a.json", []byte("west-01")); err != nil {
		t.Fatal(err)
	}
	// Opens on east: one each through Get, GetVersion and GetCurrent, one refused (no
	// envelope); a missing object opens nothing.
	var envelopes int
	for _, key := range []string{"g/db/a.json", "g/db/b.json", "g/db/primary.json"} {
		raw, _ := rawEast.Get(ctx, key)
		envelopes += len(raw)
	}
	if err := rawEast.Put(ctx, "g/db/clear.json", []byte("in clear")); err != nil {
		t.Fatal(err)
	}
	_, _ = east.Get(ctx, "g/db/a.json")
	_, _, _ = east.GetVersion(ctx, "g/db/b.json")
	_, _, _ = objectstore.GetCurrent(ctx, east, "g/db/primary.json")
	if _, err := east.Get(ctx, "g/db/clear.json"); err == nil {
		t.Fatal("an object in clear opened")
	}
	if _, err := east.Get(ctx, "g/db/missing.json"); err == nil {
		t.Fatal("a missing object was read")
	}

	want := map[string]map[string]float64{
		"s3-east": {
			"drover_store_sealed_objects_total": 3, "drover_store_sealed_bytes_total": 35, "drover_store_seal_seconds_total": 0.003,
			"drover_store_opened_objects_total": 4, "drover_store_opened_bytes_total": float64(envelopes + len("in clear")),
			"drover_store_open_seconds_total": 0.004,
		},
		"s3-west": {
			"drover_store_sealed_objects_total": 1, "drover_store_sealed_bytes_total": 7, "drover_store_seal_seconds_total": 0.001,
			"drover_store_opened_objects_total": 0, "drover_store_opened_bytes_total": 0, "drover_store_open_seconds_total": 0,
		},
	}
	for profile, figures := range want {
		got := sealFigures(t, reg, profile)
		for name, w := range figures {
			if g := got[name]; g < w-1e-9 || g > w+1e-9 {
				t.Errorf("%s{profile=%q} = %v, want %v", name, profile, g, w)
			}
		}
	}
}

func TestAStoreSealedWithoutMetricsCountsNothingAndStillOpens(t *testing.T) {
	ctx := context.Background()
	var m *objectstore.SealMetrics
	store := m.Sealed(objectstore.NewFake("s3-east"), testKeyring(t, "k1", testKey("k1", 1)))
	if err := store.Put(ctx, "g/db/a.json", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if body, err := store.Get(ctx, "g/db/a.json"); err != nil || string(body) != "a" {
		t.Errorf("Get = %q, %v; want the body sealed", body, err)
	}
}

// BenchmarkSealedStorePut is a put of a 1 KiB object (the agents' usual size) through a sealed
// store over the fake, without and with the sealing counted: what the counting adds to a call.
func BenchmarkSealedStorePut(b *testing.B) {
	ctx := context.Background()
	keys := testKeyring(b, "k1", testKey("k1", 1))
	body := make([]byte, 1<<10)
	for _, c := range []struct {
		name string
		m    *objectstore.SealMetrics
	}{{"uncounted", nil}, {"counted", objectstore.NewSealMetrics(prometheus.Labels{"cluster": "east"})}} {
		b.Run(c.name, func(b *testing.B) {
			store := c.m.Sealed(objectstore.NewFake("s3-east"), keys)
			b.ReportAllocs()
			for b.Loop() {
				if err := store.Put(ctx, "g/db/a.json", body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
