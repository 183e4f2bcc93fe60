// Package quantile computes the quantiles drover reports of durations (the CLI's mass actions,
// the benchmark, the scale tests), all by one definition: the nearest rank.
package quantile

import (
	"slices"
	"time"
)

// NearestRank is the q-th quantile (0 to 1) of durations, by the nearest-rank method: the
// smallest duration that at least q of them do not exceed. 0 for none. ds is not changed.
func NearestRank(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(ds))
	// The small epsilon keeps q·n that is a whole number in floating point from rounding up.
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
