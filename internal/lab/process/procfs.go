package process

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every architecture Linux runs Go on.
const clockTicksPerSecond = 100

// Alive reports whether pid runs and is not a zombie waiting to be reaped.
func Alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := statFields(raw)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// statFields are the fields of a /proc/<pid>/stat line after the parenthesised command name
// (which may hold spaces and parentheses): the state first ("pid (comm) S ..."), then the
// numbers. Nil for a line without the name.
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// CPU is the user and system CPU time a process (not its children) has used, from
// /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(raw)
}

// parseStatCPU reads utime and stime, the 14th and 15th fields of a /proc/<pid>/stat line.
func parseStatCPU(stat []byte) (time.Duration, error) {
	// After the name (statFields): state (3rd field) ... utime (14th) and stime (15th).
	f := statFields(stat)
	if f == nil {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat line %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad CPU time %q in /proc stat line: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// RSS is a process's resident memory in bytes (VmRSS of /proc/<pid>/status).
func RSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseRSS(raw, pid)
}

func parseRSS(status []byte, pid int) (int64, error) {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bad VmRSS of process %d: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("process %d reports no VmRSS", pid)
}

// RSSKiB is a process's resident memory in KiB, 0 when it cannot be read (the process is gone).
func RSSKiB(pid int) int64 {
	rss, err := RSS(pid)
	if err != nil {
		return 0
	}
	return rss / 1024
}
