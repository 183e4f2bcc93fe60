package bench

import (
	"math"
	"testing"
)

func TestQuantileInterpolatesInsideTheBucketOfTheRank(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name          string
		before, after map[float64]float64
		q, want       float64
	}{
		{"nothing observed", map[float64]float64{}, map[float64]float64{0.1: 0, inf: 0}, 0.99, 0},
		{"all in the first bucket", map[float64]float64{}, map[float64]float64{0.1: 10, 1: 10, inf: 10}, 0.5, 0.05},
		{"the rank in the second bucket", map[float64]float64{}, map[float64]float64{0.1: 50, 1: 100, inf: 100}, 0.99, 0.982},
		{"only the observations between the scrapes count", map[float64]float64{0.1: 50, 1: 50, inf: 50}, map[float64]float64{0.1: 50, 1: 150, inf: 150}, 0.5, 0.55},
		{"beyond the last bound reports that bound", map[float64]float64{}, map[float64]float64{0.1: 0, 1: 0, inf: 10}, 0.99, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := quantile(c.q, c.before, c.after); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
			}
		})
	}
}
