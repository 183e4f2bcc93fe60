package quantile

import (
	"testing"
	"time"
)

func TestNearestRankIsTheSmallestValueThatTheShareDoesNotExceed(t *testing.T) {
	s := time.Second
	ten := []time.Duration{10 * s, 1 * s, 9 * s, 2 * s, 8 * s, 3 * s, 7 * s, 4 * s, 6 * s, 5 * s}
	for _, tt := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{3 * s}, 0.99, 3 * s},
		{ten, 0, 1 * s},
		{ten, 0.5, 5 * s},
		{ten, 0.51, 6 * s},
		{ten, 0.9, 9 * s},
		{ten, 0.99, 10 * s},
		{ten, 1, 10 * s},
		{[]time.Duration{4 * s, 1 * s, 3 * s}, 0.5, 3 * s},
	} {
		if got := NearestRank(tt.ds, tt.q); got != tt.want {
			t.Errorf("NearestRank(%v, %v) = %v, want %v", tt.ds, tt.q, got, tt.want)
		}
	}
	if ten[0] != 10*s || ten[9] != 5*s {
		t.Errorf("NearestRank sorted its argument in place: %v", ten)
	}
}
