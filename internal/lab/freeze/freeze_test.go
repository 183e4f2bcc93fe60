package freeze

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
)

// settle is how long a frozen writer is watched for a write it must not make: it writes every
// few milliseconds when it runs.
const settle = 200 * time.Millisecond

// writer is a shell appending a line every 5 ms to a log file in each of its directories.
type writer struct {
	cmd  *exec.Cmd
	logs []string // the log files as this test process sees them
}

// writerLoop is the shell loop appending to a log file in each of dirs (as the writer sees them).
func writerLoop(dirs []string) string {
	var appends []string
	for _, d := range dirs {
		appends = append(appends, fmt.Sprintf("echo $i >> %s/log", d))
	}
	return fmt.Sprintf("i=0; while :; do i=$((i+1)); %s; sleep 0.005; done", strings.Join(appends, "; "))
}

// startPod starts a writer as the lab kubelet runs a pod: in its own mount namespace, each volume
// bind mounted at a directory of its own, its working directory outside them all. This process
// then holds no path of the volumes the writer writes through.
func startPod(t *testing.T, vols ...string) *writer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a pod's bind mounts need root, as the whole lab does: run the tests as root")
	}
	var script, mounted []string
	w := &writer{}
	for _, v := range vols {
		m := filepath.Join(t.TempDir(), "mnt")
		must(t, os.Mkdir(m, 0o755))
		script = append(script, fmt.Sprintf("mount --bind %s %s", v, m))
		mounted = append(mounted, m)
		w.logs = append(w.logs, filepath.Join(v, "log"))
	}
	script = append(script, "cd /", writerLoop(mounted))
	w.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", strings.Join(script, " && "))
	start(t, w)
	return w
}

// startShell starts a writer in this process's mount namespace, working in dir.
func startShell(t *testing.T, dir string) *writer {
	t.Helper()
	w := &writer{logs: []string{filepath.Join(dir, "log")}}
	w.cmd = exec.Command("sh", "-c", writerLoop([]string{"."}))
	w.cmd.Dir = dir
	start(t, w)
	return w
}

func start(t *testing.T, w *writer) {
	t.Helper()
	w.cmd.Stderr = os.Stderr
	must(t, w.cmd.Start())
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill() // a stopped process dies of SIGKILL too
		_ = w.cmd.Wait()
	})
	w.waitMoving(t)
}

// sizes are the writer's log sizes.
func (w *writer) sizes(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	for _, l := range w.logs {
		info, err := os.Stat(l)
		if err != nil {
			out = append(out, -1)
			continue
		}
		out = append(out, info.Size())
	}
	return out
}

// waitMoving waits until every log of the writer grows.
func (w *writer) waitMoving(t *testing.T) {
	t.Helper()
	was := w.sizes(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := w.sizes(t)
		grown := true
		for i := range now {
			grown = grown && now[i] > was[i] && was[i] >= 0
		}
		if grown {
			t.Logf("pid %d writes: logs at %v bytes", w.cmd.Process.Pid, now)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer (pid %d) does not write: its logs stay at %v bytes (first seen %v)", w.cmd.Process.Pid, now, was)
		}
		if was[0] < 0 {
			was = now
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertFrozen checks that the writer is stopped and its logs do not change over settle. A
// shell that waits for a command it vforked counts as stopped, as the freezer counts it (stopped):
// the command is stopped, and the shell runs nothing until it ends.
func (w *writer) assertFrozen(t *testing.T) {
	t.Helper()
	pid := w.cmd.Process.Pid
	st, err := process.ReadStat(fmt.Sprintf("/proc/%d/stat", pid))
	must(t, err)
	before := w.sizes(t)
	time.Sleep(settle)
	after := w.sizes(t)
	t.Logf("pid %d state %c, logs %v bytes, %s later %v", pid, st.State, before, settle, after)
	if st.State != 'T' && (st.State != 'D' || !inVfork(pid, strconv.Itoa(pid))) {
		t.Errorf("the writer (pid %d) is in state %c (%s), want T (stopped)", pid, st.State, describeProc(pid))
	}
	for i := range after {
		if after[i] != before[i] {
			t.Errorf("%s grew from %d to %d bytes while frozen", w.logs[i], before[i], after[i])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFreezeStopsAPodWritingThroughItsBindMount: a pod's process writes into the volume through
// a bind mount in its own mount namespace; a freeze of the volume's directory stops it, and a
// process writing elsewhere keeps going.
func TestFreezeStopsAPodWritingThroughItsBindMount(t *testing.T) {
	vol, other := t.TempDir(), t.TempDir()
	pod := startPod(t, vol)
	bystander := startShell(t, other)

	began := time.Now()
	thaw, err := Freeze(vol)
	must(t, err)
	t.Logf("froze %s in %s", vol, time.Since(began).Round(time.Microsecond))
	pod.assertFrozen(t)
	bystander.waitMoving(t)
	thaw()
	pod.waitMoving(t)
	thaw() // a second call does nothing
	pod.waitMoving(t)
}

// TestFreezeStopsAProcessHoldingTheDirectory: without a mount of its own, a process is found by
// its working directory or open files, in this process's mount namespace.
func TestFreezeStopsAProcessHoldingTheDirectory(t *testing.T) {
	vol := t.TempDir()
	must(t, os.Mkdir(filepath.Join(vol, "data"), 0o750))
	shell := startShell(t, filepath.Join(vol, "data"))

	thaw, err := Freeze(vol)
	must(t, err)
	shell.assertFrozen(t)
	thaw()
	shell.waitMoving(t)
}

// TestOverlappingFreezesResumeAtTheLastThaw: a pod with two volumes is stopped by the copy of
// each; it resumes only when both copies are done. The same volume frozen twice at once too.
func TestOverlappingFreezesResumeAtTheLastThaw(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	pod := startPod(t, a, b)

	thawA, err := Freeze(a)
	must(t, err)
	thawB, err := Freeze(b)
	must(t, err)
	thawA2, err := Freeze(a)
	must(t, err)
	pod.assertFrozen(t)
	thawA()
	pod.assertFrozen(t)
	thawA2()
	pod.assertFrozen(t)
	thawB()
	pod.waitMoving(t)
}

// TestFreezeOfABindMountedSubdirectory: a pod that mounts a directory inside the volume is a user
// of the volume.
func TestFreezeOfABindMountedSubdirectory(t *testing.T) {
	vol := t.TempDir()
	sub := filepath.Join(vol, "pgdata")
	must(t, os.Mkdir(sub, 0o750))
	pod := startPod(t, sub)

	thaw, err := Freeze(vol)
	must(t, err)
	pod.assertFrozen(t)
	thaw()
	pod.waitMoving(t)
}

// TestFreezeNeverStopsItsCaller: this process holds the directory open and its working
// directory is in it; the freeze finds no one else and leaves it running.
func TestFreezeNeverStopsItsCaller(t *testing.T) {
	vol := t.TempDir()
	f, err := os.Create(filepath.Join(vol, "open"))
	must(t, err)
	defer f.Close()
	t.Chdir(vol)
	thaw, err := Freeze(vol)
	must(t, err)
	thaw()
	thaw, err = Freeze(filepath.Join(vol, "missing"))
	must(t, err)
	thaw()
	if len(Default.held) != 0 {
		t.Errorf("the freezer still holds %v", Default.held)
	}
}

// TestFreezeLeavesAStoppedProcessStopped: a process stopped by someone else (a debugger, job
// control) is held while frozen and left stopped at the thaw.
func TestFreezeLeavesAStoppedProcessStopped(t *testing.T) {
	vol := t.TempDir()
	shell := startShell(t, vol)
	must(t, syscall.Kill(shell.cmd.Process.Pid, syscall.SIGSTOP))
	for !stopped(proc{pid: shell.cmd.Process.Pid}) {
		time.Sleep(time.Millisecond)
	}
	thaw, err := Freeze(vol)
	must(t, err)
	thaw()
	shell.assertFrozen(t)
	must(t, syscall.Kill(shell.cmd.Process.Pid, syscall.SIGCONT))
	shell.waitMoving(t)
}

// BenchmarkFreeze measures a freeze and thaw of a volume that one pod writes through its bind
// mount, on a machine with the processes it has.
func BenchmarkFreeze(b *testing.B) {
	vol := b.TempDir()
	m := filepath.Join(b.TempDir(), "mnt")
	if err := os.Mkdir(m, 0o755); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		fmt.Sprintf("mount --bind %s %s && cd / && %s", vol, m, writerLoop([]string{m})))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(100 * time.Millisecond)
	for b.Loop() {
		thaw, err := Freeze(vol)
		if err != nil {
			b.Fatal(err)
		}
		thaw()
	}
}
