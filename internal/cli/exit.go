package cli

import (
	"errors"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exit statuses of drover's verbs, so that a script can tell why a command failed. docs/cli.md
// documents them; keep the two in step.
const (
	// ExitOK: done, or a preview (--dry-run, plan, cluster lost without --yes) printed.
	ExitOK = 0
	// ExitFailed: any other failure.
	ExitFailed = 1
	// ExitUsage: the command line is wrong (unknown flag or command, bad arguments, a missing
	// --yes without a terminal to confirm on); nothing was read or changed.
	ExitUsage = 2
	// ExitRefused: the action was refused (a precondition of the plan, the hub, the API server,
	// or the person asked to confirm); nothing was changed.
	ExitRefused = 3
	// ExitTimedOut: --wait gave up (its --timeout passed, or the hub did not take the action
	// up); the hub goes on.
	ExitTimedOut = 4
	// ExitPartial: a mass action (--all) where some applications did not complete.
	ExitPartial = 5
	// ExitUnreachable: the hub cluster (or a managed cluster the verb talks to) did not answer.
	ExitUnreachable = 6
)

// ExitError is an error with the exit status it means.
type ExitError struct {
	// Code is one of the Exit constants.
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the exit status of the error.
func (e *ExitError) ExitCode() int { return e.Code }

// withCode wraps err with code; nil stays nil, and an error that already has a code keeps it.
func withCode(code int, err error) error {
	var e *ExitError
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &ExitError{Code: code, Err: err}
}

// Usage marks err as a wrong command line.
func Usage(err error) error { return withCode(ExitUsage, err) }

// Refused marks err as a refusal: nothing was changed.
func Refused(err error) error { return withCode(ExitRefused, err) }

// TimedOut marks err as --wait giving up.
func TimedOut(err error) error { return withCode(ExitTimedOut, err) }

// Partial marks err as a mass action that did not complete for every application.
func Partial(err error) error { return withCode(ExitPartial, err) }

// Unreachable marks err as a cluster that did not answer.
func Unreachable(err error) error { return withCode(ExitUnreachable, err) }

// ExitCodeOf is the exit status for err: the code it carries (an ExitError anywhere in its
// chain), ExitUnreachable for a network error or an API server that is unavailable,
// ExitUsage for the errors cobra makes of an unknown command, else ExitFailed; ExitOK for nil.
func ExitCodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	if isUnreachable(err) {
		return ExitUnreachable
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		return ExitUsage
	}
	return ExitFailed
}

// isUnreachable says whether err is a failed connection (client-go returns a *url.Error for a
// request that got no answer; a dial a *net.OpError) or an API server saying it cannot serve
// now. Not net.Error: a syscall.Errno implements it, so a missing kubeconfig file would count.
func isUnreachable(err error) bool {
	var urlErr *url.Error
	var opErr *net.OpError
	return errors.As(err, &urlErr) || errors.As(err, &opErr) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
