package freeze

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
)

const (
	// stopTimeout bounds the wait for a process to stop: a process in uninterruptible sleep
	// (a hung disk) stops only when its I/O returns.
	stopTimeout = 10 * time.Second
	// stopPoll is how often a freeze looks whether the processes it signalled have stopped.
	stopPoll = time.Millisecond
	// maxRescans bounds the scans of one freeze: each finds the processes that appeared while
	// the previous one's were being stopped (a child forked just before its parent stopped).
	maxRescans = 5
)

// Thaw resumes what a freeze stopped, once the last freeze holding a process is thawed. Calling
// it more than once does nothing more.
type Thaw func()

// Freezer stops the processes that use a directory, counting the freezes that hold each one, so
// that a process stopped for two overlapping copies (a pod with two volumes, a volume copied
// twice at once) resumes when the last of them thaws. Signals are process-wide, so one Freezer
// serves a process: Default.
type Freezer struct {
	mu   sync.Mutex
	held map[proc]*hold
}

// hold is a stopped process's count of freezes.
type hold struct {
	count int
	// theirs: the process was stopped already (a debugger, a shell's job control) when first
	// held; the last thaw leaves it stopped.
	theirs bool
}

// Default is the freezer of this process.
var Default = &Freezer{held: map[proc]*hold{}}

// Freeze stops the users of dir with Default.
func Freeze(dir string) (Thaw, error) { return Default.Freeze(dir) }

// Freeze stops every process that uses dir (scan.go, users: it or a directory inside it bind
// mounted into the process's mount namespace, its working directory, root or an open file in
// it), other than this process and its ancestors, with SIGSTOP, and returns once every thread of
// each has stopped: from then until the thaw, no write of theirs reaches dir (a write under way
// when the signal came completes first, as it would before a power loss). A missing dir has no
// users. On an error nothing stays stopped by this freeze.
func (f *Freezer) Freeze(dir string) (Thaw, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to resolve directory %s: %w", dir, err)
	}
	s, err := newScan(abs)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var mine []proc
	thaw := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.release(mine)
	}
	for range maxRescans {
		found, err := s.users()
		if err != nil {
			f.release(mine)
			return nil, err
		}
		fresh := f.take(found, mine)
		if len(fresh) == 0 {
			var once sync.Once
			return func() { once.Do(thaw) }, nil
		}
		mine = append(mine, fresh...)
		if err := waitStopped(fresh); err != nil {
			f.release(mine)
			return nil, fmt.Errorf("failed to stop the processes using %s: %w", dir, err)
		}
	}
	f.release(mine)
	return nil, fmt.Errorf("failed to stop the processes using %s: new ones kept appearing over %d scans", dir, maxRescans)
}

// newScan prepares the scans of one freeze of the directory abs.
func newScan(abs string) (*scan, error) {
	loc, err := locate(abs)
	if err != nil {
		return nil, err
	}
	ownNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return nil, fmt.Errorf("failed to read this process's mount namespace: %w", err)
	}
	exclude, err := lineage()
	if err != nil {
		return nil, err
	}
	return &scan{t: target{dir: abs, loc: loc}, ownNS: ownNS, exclude: exclude, mountedNS: map[string]bool{}, seen: map[proc]bool{}}, nil
}

// take holds the found processes this freeze does not hold yet, stopping those no freeze holds,
// and returns them. Called with f.mu held.
func (f *Freezer) take(found, mine []proc) []proc {
	var fresh []proc
	for _, p := range found {
		if slices.Contains(mine, p) {
			continue
		}
		if h, ok := f.held[p]; ok {
			h.count++
			fresh = append(fresh, p)
			continue
		}
		st, err := process.ReadStat(fmt.Sprintf("/proc/%d/stat", p.pid))
		if err != nil || st.Start != p.start {
			continue // gone since the scan
		}
		h := &hold{count: 1, theirs: st.State == 'T' || st.State == 't'}
		if !h.theirs && syscall.Kill(p.pid, syscall.SIGSTOP) != nil {
			continue // gone since the scan
		}
		f.held[p] = h
		fresh = append(fresh, p)
	}
	return fresh
}

// release drops this freeze's holds, resuming the processes no other freeze holds. Called with
// f.mu held.
func (f *Freezer) release(mine []proc) {
	for _, p := range mine {
		h, ok := f.held[p]
		if !ok {
			continue
		}
		if h.count--; h.count > 0 {
			continue
		}
		delete(f.held, p)
		if st, err := process.ReadStat(fmt.Sprintf("/proc/%d/stat", p.pid)); err == nil && st.Start == p.start && !h.theirs {
			_ = syscall.Kill(p.pid, syscall.SIGCONT)
		}
	}
}

// waitStopped waits until every thread of every process has stopped (state T or t) or exited.
func waitStopped(procs []proc) error {
	deadline := time.Now().Add(stopTimeout)
	for _, p := range procs {
		for !stopped(p) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d did not stop within %s (%s)", p.pid, stopTimeout, describeProc(p.pid))
			}
			time.Sleep(stopPoll)
		}
	}
	return nil
}

// stopped reports whether every thread of p has stopped or exited (p gone included), or waits
// for a child it vforked: such a thread runs no code of its own until that child execs or exits,
// and cannot stop before (a shell such as dash vforks its commands), while the child is one the
// freeze stops too, found by its rescans.
func stopped(p proc) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.pid))
	if err != nil {
		return true
	}
	if st, err := process.ReadStat(fmt.Sprintf("/proc/%d/stat", p.pid)); err != nil || st.Start != p.start {
		return true
	}
	for _, t := range tasks {
		st, err := process.ReadStat(fmt.Sprintf("/proc/%d/task/%s/stat", p.pid, t.Name()))
		if err != nil {
			continue
		}
		switch {
		case st.State == 'T', st.State == 't', st.State == 'Z', st.State == 'X':
		case st.State == 'D' && inVfork(p.pid, t.Name()):
		default:
			return false
		}
	}
	return true
}

// describeProc says, for an error, what process pid runs and the state of each of its threads.
func describeProc(pid int) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	states := make([]string, 0, len(tasks))
	for _, t := range tasks {
		if st, err := process.ReadStat(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name())); err == nil {
			wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, t.Name()))
			states = append(states, t.Name()+":"+string(st.State)+" in "+string(wchan))
		}
	}
	return fmt.Sprintf("%s, threads %v", strings.TrimSpace(string(comm)), states)
}

// inVfork reports whether thread tid of pid sleeps in the kernel waiting for a vforked child
// (wait_for_vfork_done, inlined into kernel_clone on recent kernels).
func inVfork(pid int, tid string) bool {
	wchan, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, tid))
	if err != nil {
		return false
	}
	w := string(wchan)
	return w == "kernel_clone" || strings.Contains(w, "vfork")
}
