package freeze

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/drover-io/drover/internal/lab/process"
)

// target is a directory whose users a scan looks for.
type target struct {
	// dir is its absolute path in this process's mount namespace, symbolic links resolved.
	dir string
	// loc finds it in other mount namespaces.
	loc location
}

// scan is one pass over /proc. A mount namespace's mounts are read once, from its first process.
type scan struct {
	t       target
	ownNS   string
	exclude map[int]bool
	// mountedNS records, per mount namespace, whether it mounts the target.
	mountedNS map[string]bool
	// seen are the processes an earlier pass examined: a later pass looks only for new ones
	// (forked meanwhile), as reading every process's open files is what a pass costs.
	seen map[proc]bool
}

// users returns the processes, not returned or examined by an earlier pass, that use the target: those of another mount namespace that has
// the directory (or a directory inside it) mounted, as a pod's namespace has its volumes bind
// mounted; and, in any namespace, those whose working directory, root or an open file lies in
// it. The processes of this process's own mount namespace are not taken for users only because
// the namespace shows the directory (every process on the machine would be): they must hold it.
// Zombies and the excluded processes are left out.
func (s *scan) users() ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list processes: %w", err)
	}
	var found []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || s.exclude[pid] {
			continue
		}
		st, err := process.ReadStat(filepath.Join("/proc", e.Name(), "stat"))
		p := proc{pid: pid, start: st.Start}
		if err != nil || st.State == 'Z' || st.State == 'X' || s.seen[p] {
			continue // gone, exited, or examined
		}
		s.seen[p] = true
		if s.mounts(pid) || s.holds(pid) {
			found = append(found, p)
		}
	}
	return found, nil
}

// mounts reports whether pid lives in another mount namespace that mounts the target.
func (s *scan) mounts(pid int) bool {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil || ns == s.ownNS {
		return false
	}
	if mounted, ok := s.mountedNS[ns]; ok {
		return mounted
	}
	mounts, err := process.ReadMountinfo(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return false // gone: the namespace is read again from its next process
	}
	s.mountedNS[ns] = s.t.loc.mountedIn(mounts)
	return s.mountedNS[ns]
}

// holds reports whether pid's working directory, root directory or an open file lies in the
// target directory.
func (s *scan) holds(pid int) bool {
	base := fmt.Sprintf("/proc/%d", pid)
	for _, link := range []string{"cwd", "root"} {
		if p, err := os.Readlink(filepath.Join(base, link)); err == nil && within(p, s.t.dir) {
			return true
		}
	}
	fds, err := os.ReadDir(filepath.Join(base, "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil && within(p, s.t.dir) {
			return true
		}
	}
	return false
}

// lineage is this process and its ancestors, which a freeze never stops: the copy runs in this
// process, and a stopped parent could be waiting on it.
func lineage() (map[int]bool, error) {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !out[pid]; {
		out[pid] = true
		st, err := process.ReadStat(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, fmt.Errorf("failed to read process %d, an ancestor of this one: %w", pid, err)
		}
		pid = st.PPID
	}
	return out, nil
}
