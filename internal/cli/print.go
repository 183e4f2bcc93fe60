package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// The printing and clock helpers every verb uses: the verbs' clock and the hub's polling
// pace, defaults of options, and the small forms of a line a person reads.

// Defaults every verb that follows the hub shares.
const (
	// DefaultPollInterval is how often --wait reads the DRPlacementControl; the hub itself polls
	// the clusters every second during an action.
	DefaultPollInterval = time.Second
	// DefaultStallAfter is how long --wait gives the hub to observe the changed spec: a running
	// hub stamps its conditions with the new generation within seconds.
	DefaultStallAfter = time.Minute
)

// Now is f's time, or the wall clock's when f is nil: the verbs' options carry a clock for
// tests.
func Now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// OrDefault is v, or d when v is zero.
func OrDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// Clock is a time of day as the hub's messages print it, in UTC.
func Clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) + " UTC" }

// Age is a duration as kubectl prints ages.
func Age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

// Dash is s, or "-" when s is empty, as a table cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NewTabWriter is the tab writer of every table the verbs print.
func NewTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) }

// Printer writes lines to W and keeps the first error in Err.
type Printer struct {
	W   io.Writer
	Err error
}

// Linef prints a line unless an earlier one failed.
func (p *Printer) Linef(format string, args ...any) {
	if p.Err == nil {
		_, p.Err = fmt.Fprintf(p.W, format+"\n", args...)
	}
}

// ProgressWriter is where a verb printing objects on w prints its progress: log, or nowhere.
func ProgressWriter(w io.Writer, format string, log io.Writer) io.Writer {
	if format == "" {
		return w
	}
	if log == nil {
		return io.Discard
	}
	return log
}
