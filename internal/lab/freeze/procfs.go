package freeze

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc names a process across PID reuse: its PID and its start time in clock ticks since boot.
type proc struct {
	pid   int
	start uint64
}

// procStat is what the freezer reads of /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	start uint64
}

// readStat reads /proc/<pid>/stat, or /proc/<pid>/task/<tid>/stat when path says so.
func readStat(path string) (procStat, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseStat(raw)
}

// parseStat reads the state (3rd field), the parent (4th) and the start time (22nd) of a
// /proc stat line, whose command name (2nd, in parentheses) may hold spaces and parentheses.
func parseStat(raw []byte) (procStat, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed /proc stat line %q", raw)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("short /proc stat line %q", raw)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("bad parent in /proc stat line %q: %w", raw, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("bad start time in /proc stat line %q: %w", raw, err)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// mount is one line of a /proc/<pid>/mountinfo: which directory of which file system is
// mounted where.
type mount struct {
	// dev is the file system's major:minor.
	dev string
	// root is the directory of that file system the mount shows (a bind mount's source).
	root string
	// point is where it is mounted, in the mount namespace of the process read.
	point string
}

// readMountinfo parses /proc/<pid>/mountinfo (proc(5)): "id parent major:minor root point ...",
// root and point with spaces, tabs, newlines and backslashes escaped in octal.
func readMountinfo(path string) ([]mount, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mounts []mount
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mounts = append(mounts, mount{dev: f[2], root: unescape(f[3]), point: unescape(f[4])})
	}
	return mounts, sc.Err()
}

// unescape undoes mountinfo's octal escapes ("\040" for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
	mounts, err := readMountinfo("/proc/self/mountinfo")
	if err != nil {
		return location{}, fmt.Errorf("failed to read this process's mounts: %w", err)
	}
	best := -1
	for i, m := range mounts {
		if within(dir, m.point) && (best < 0 || len(m.point) >= len(mounts[best].point)) {
			best = i
		}
	}
	if best < 0 {
		return location{}, fmt.Errorf("no mount shows %s", dir)
	}
	m := mounts[best]
	rel, err := filepath.Rel(m.point, dir)
	if err != nil {
		return location{}, err
	}
	return location{dev: m.dev, path: filepath.Join(m.root, rel)}, nil
}

// mountedIn reports whether one of the mounts shows the located directory or a directory inside
// it: a bind mount of the volume (or of a part of it) into a pod's mount namespace.
func (l location) mountedIn(mounts []mount) bool {
	for _, m := range mounts {
		if m.dev == l.dev && within(m.root, l.path) {
			return true
		}
	}
	return false
}
