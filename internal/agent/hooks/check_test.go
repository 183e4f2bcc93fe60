package hooks

import (
	"context"
	"testing"
	"time"
)

// timerLate is a context whose deadline has passed while its timer has not yet marked it done,
// the moment in which client-go's rate limiter refuses a read.
type timerLate struct{ context.Context } //nolint:containedctx // the context is the case under test

func (timerLate) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A read refused in the moment between a check's deadline and its context's end says nothing
// of the object: the check keeps what it last saw instead of reporting the refusal.
func TestAReadCutByTheDeadlineBeforeTheContextEndsIsNotWhatTheCheckSaw(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  context.Context //nolint:containedctx // each case is a context
		want bool
	}{
		{"no deadline", context.Background(), false},
		{"deadline ahead", func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			t.Cleanup(cancel)
			return ctx
		}(), false},
		{"deadline passed, timer late", timerLate{context.Background()}, true},
		{"done", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}(), true},
	} {
		if got := pastDeadline(tc.ctx); got != tc.want {
			t.Errorf("%s: pastDeadline = %v, want %v", tc.name, got, tc.want)
		}
	}
}
