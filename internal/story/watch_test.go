package story

import (
	"testing"
	"time"
)

// A drover process killed while a returned cluster's grace runs restarts the grace when it runs
// again; one killed with no return, or after the grace ended, changes nothing.
func TestAKillDuringAReturnsGraceCountsItsRestartAsAReturn(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 32, 59, 0, time.UTC)
	r := New(Env{}, Case{}, "east")
	r.DroverRestarted(t0.Add(-time.Minute), t0.Add(-58*time.Second))
	if got := r.lastBackLocked(); !got.IsZero() {
		t.Fatalf("a kill before any return moved the grace to %s", got)
	}

	r.back["east"] = t0
	r.DroverRestarted(t0.Add(27*time.Second), t0.Add(35*time.Second))
	if got, want := r.lastBackLocked(), t0.Add(35*time.Second); !got.Equal(want) {
		t.Fatalf("after a kill 27 s into the grace the grace counts from %s, want the restart at %s", got, want)
	}

	r.DroverRestarted(t0.Add(30*time.Second), t0.Add(31*time.Second))
	if got, want := r.lastBackLocked(), t0.Add(35*time.Second); !got.Equal(want) {
		t.Fatalf("an earlier restart moved the grace back to %s, want %s", got, want)
	}

	r.DroverRestarted(t0.Add(35*time.Second+returnGrace+time.Second), t0.Add(2*time.Minute))
	if got, want := r.lastBackLocked(), t0.Add(35*time.Second); !got.Equal(want) {
		t.Fatalf("a kill after the grace ended moved it to %s, want %s", got, want)
	}

	r.back["west"] = t0.Add(3 * time.Minute)
	if got, want := r.lastBackLocked(), t0.Add(3*time.Minute); !got.Equal(want) {
		t.Fatalf("a later return counts from %s, want %s", got, want)
	}
}
