// Package crash kills a drover component at one of its writes, as Sieve (OSDI '22) did to find
// the bugs of controllers that die between two writes.
//
// An Injector stands between one running instance of the hub or an agent and what it writes
// to: the API servers (Wrap, a transport of its clients) and the S3 stores (Store). It counts
// the instance's writes (requests that change state: creates, updates, patches and deletes, not
// dry runs, events, leases or access reviews; S3 puts and deletes) and, when armed, kills the
// instance at the chosen write, right before it (the write never reaches the server) or right
// after it (the server applied it; the instance never learns). A killed instance does nothing
// more: every request it makes from then on fails with ErrCrashed, reads included, as a
// process that is gone. Crashed tells the harness to replace it with a new instance.
package crash

import (
	"errors"
	"fmt"
	"sync"
)

// ErrCrashed is what a killed instance's requests fail with.
var ErrCrashed = errors.New("crash: the component was killed")

// When is the side of the write the crash is on.
type When string

const (
	// Before kills the instance right before the write: the write is not made.
	Before When = "before"
	// After kills the instance right after the write was applied, before it sees the answer.
	After When = "after"
)

// Point is a crash point: the Write-th write (from 1) counted from Arm.
type Point struct {
	Write int
	When  When
}

func (p Point) String() string { return fmt.Sprintf("%s write %d", p.When, p.Write) }

// Injector counts the writes of one instance of a component and kills it at its point.
type Injector struct {
	name    string
	mu      sync.Mutex
	writes  int
	armedAt int
	point   *Point
	dead    bool
	killed  string
	crashed chan struct{}
	log     []string
}

// New returns an Injector of the named component, counting and not armed.
func New(name string) *Injector {
	return &Injector{name: name, crashed: make(chan struct{})}
}

// Arm kills the instance at p, counting from now; it replaces an earlier point.
func (i *Injector) Arm(p Point) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.armedAt, i.point = i.writes, &p
}

// Disarm removes the point; it reports whether the instance was killed.
func (i *Injector) Disarm() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.point = nil
	return i.dead
}

// Crashed is closed when the instance is killed.
func (i *Injector) Crashed() <-chan struct{} { return i.crashed }

// Writes is how many writes the instance made or tried, the one it was killed at included.
func (i *Injector) Writes() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.writes
}

// Since returns the writes from the n-th on (from 0), each as "METHOD path" or "s3 op key".
func (i *Injector) Since(n int) []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if n >= len(i.log) {
		return nil
	}
	return append([]string(nil), i.log[n:]...)
}

// Killed describes the write the instance was killed at; empty while it lives.
func (i *Injector) Killed() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.killed
}

// alive fails once the instance is killed.
func (i *Injector) alive() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.dead {
		return fmt.Errorf("%s: %w", i.name, ErrCrashed)
	}
	return nil
}

// write makes one write through do, unless the instance is dead or dies at it.
func (i *Injector) write(what string, do func() error) error {
	i.mu.Lock()
	if i.dead {
		i.mu.Unlock()
		return fmt.Errorf("%s: %w", i.name, ErrCrashed)
	}
	i.writes++
	i.log = append(i.log, what)
	fire := i.point != nil && i.writes == i.armedAt+i.point.Write
	var when When
	if fire {
		when = i.point.When
	}
	if when == Before {
		i.kill(what)
		i.mu.Unlock()
		return fmt.Errorf("%s, before %s: %w", i.name, what, ErrCrashed)
	}
	i.mu.Unlock()
	err := do()
	if when == After {
		i.mu.Lock()
		i.kill(what)
		i.mu.Unlock()
		return fmt.Errorf("%s, after %s: %w", i.name, what, ErrCrashed)
	}
	return err
}

// kill marks the instance dead; i.mu is held.
func (i *Injector) kill(what string) {
	i.dead = true
	i.killed = fmt.Sprintf("%s %s (write %d since armed)", i.point.When, what, i.writes-i.armedAt)
	close(i.crashed)
}
