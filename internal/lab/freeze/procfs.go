package freeze

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/drover-io/drover/internal/lab/process"
)

// proc names a process across PID reuse: its PID and its start time in clock ticks since boot.
type proc struct {
	pid   int
	start uint64
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// location is a directory as every mount namespace can recognise it: the file system it is on
// (dev) and its path from that file system's root (path).
type location struct {
	dev, path string
}

// locate finds dir (absolute, symbolic links resolved) in this process's mount namespace: the
// mount that shows it (the deepest, the last of equals, as the later one hides the earlier).
func locate(dir string) (location, error) {
	mounts, err := process.ReadMountinfo("/proc/self/mountinfo")
	if err != nil {
		return location{}, fmt.Errorf("failed to read this process's mounts: %w", err)
	}
	best := -1
	for i, m := range mounts {
		if within(dir, m.Point) && (best < 0 || len(m.Point) >= len(mounts[best].Point)) {
			best = i
		}
	}
	if best < 0 {
		return location{}, fmt.Errorf("no mount shows %s", dir)
	}
	m := mounts[best]
	rel, err := filepath.Rel(m.Point, dir)
	if err != nil {
		return location{}, err
	}
	return location{dev: m.Dev, path: filepath.Join(m.Root, rel)}, nil
}

// mountedIn reports whether one of the mounts shows the located directory or a directory inside
// it: a bind mount of the volume (or of a part of it) into a pod's mount namespace.
func (l location) mountedIn(mounts []process.Mount) bool {
	for _, m := range mounts {
		if m.Dev == l.dev && within(m.Root, l.path) {
			return true
		}
	}
	return false
}
