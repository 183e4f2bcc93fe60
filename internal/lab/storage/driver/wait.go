package driver

import (
	"fmt"
	"time"
)

// WaitError is a precondition that is not met yet. The reconciler reports its message in a
// condition and tries again after its delay; it never reaches controller-runtime.
type WaitError struct {
	Msg   string
	After time.Duration
	Cause error
	// Connecting is a wait upstream's source mover spends inside its running Job, retrying its
	// connection (mover-rsync-tls/client.sh): VolSync reports it as Synchronizing True,
	// SyncInProgress, since the Job has neither succeeded nor failed
	// (controllers/mover/rsynctls/mover.go, Synchronize returns InProgress while the Job runs).
	Connecting bool
}

func (e *WaitError) Error() string { return e.Msg }

func (e *WaitError) Unwrap() error { return e.Cause }

// WaitFor is a wait of after with a message.
func WaitFor(after time.Duration, format string, args ...any) error {
	return &WaitError{Msg: fmt.Sprintf(format, args...), After: after}
}

// ConnectingFor is a wait of a source's mover that keeps trying to reach its destination.
func ConnectingFor(after time.Duration, format string, args ...any) error {
	return &WaitError{Msg: fmt.Sprintf(format, args...), After: after, Connecting: true}
}
