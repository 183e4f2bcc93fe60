package process

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What the freezer (internal/lab/freeze) reads of /proc to find a volume's users and to see
// that they stopped: a process's state, parent and start time, and its mount namespace's mounts.

// Stat is what the lab reads of a /proc/<pid>/stat line: the state, the parent and the start
// time in clock ticks since boot (which, with the PID, names a process across PID reuse).
type Stat struct {
	State byte
	PPID  int
	Start uint64
}

// ReadStat reads /proc/<pid>/stat, or /proc/<pid>/task/<tid>/stat when path says so.
func ReadStat(path string) (Stat, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return parseStat(raw)
}

// parseStat reads the state (3rd field), the parent (4th) and the start time (22nd) of a
// /proc stat line, whose command name (2nd, in parentheses) may hold spaces and parentheses.
func parseStat(raw []byte) (Stat, error) {
	f := statFields(raw)
	if f == nil {
		return Stat{}, fmt.Errorf("malformed /proc stat line %q", raw)
	}
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("short /proc stat line %q", raw)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("bad parent in /proc stat line %q: %w", raw, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("bad start time in /proc stat line %q: %w", raw, err)
	}
	return Stat{State: f[0][0], PPID: ppid, Start: start}, nil
}

// Mount is one line of a /proc/<pid>/mountinfo: which directory of which file system is
// mounted where.
type Mount struct {
	// Dev is the file system's major:minor.
	Dev string
	// Root is the directory of that file system the mount shows (a bind mount's source).
	Root string
	// Point is where it is mounted, in the mount namespace of the process read.
	Point string
}

// ReadMountinfo parses /proc/<pid>/mountinfo (proc(5)): "id parent major:minor root point ...",
// root and point with spaces, tabs, newlines and backslashes escaped in octal.
func ReadMountinfo(path string) ([]Mount, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mounts []Mount
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mounts = append(mounts, Mount{Dev: f[2], Root: unescape(f[3]), Point: unescape(f[4])})
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
