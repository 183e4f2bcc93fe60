package driver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// copyPace is the pacing of the copies below: the writer writes every few milliseconds, so a
// copy that runs while it writes sees its second file later than its first.
const copyPace = 30 * time.Millisecond

// startPod runs a pod's process as the lab kubelet does: in its own mount namespace, the volume
// bind mounted, appending the same counter to a then to b from a child process forked for each
// counter (so a freeze must find the children too). Any instant of the volume has
// b ≤ a ≤ b+1; a copy made file by file while it writes has b ahead of a.
func startPod(t *testing.T, vol string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a pod's bind mount needs root, as the whole lab does: run the tests as root")
	}
	m := filepath.Join(t.TempDir(), "mnt")
	must(t, os.Mkdir(m, 0o755))
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", fmt.Sprintf(
		"mount --bind %s %[2]s && cd / && i=0; while :; do i=$((i+1)); (echo $i >> %[2]s/a; sleep 0.001; echo $i >> %[2]s/b); done", vol, m))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	t.Cleanup(func() {
		// The whole group: a subshell forked for a counter outlives its parent's kill and would
		// write into the volume while the test removes it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, _, _ := counters(vol); a > 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod's process does not write")
		}
	}
}

// counters reads the last counter of a and of b in dir.
func counters(dir string) (a, b int, err error) {
	last := func(name string) (int, error) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		return strconv.Atoi(string(lines[len(lines)-1]))
	}
	if a, err = last("a"); err == nil {
		b, err = last("b")
	}
	return a, b, err
}

// copies copies the pod's volume n times with the storage's options and, unless nil, the copy
// settings of the running storage, returning how many copies were torn (b ahead of a, or a more
// than one ahead of b).
func copies(t *testing.T, opts Options, settings *CopySettings, n int) (torn int) {
	t.Helper()
	opts.DataDir = t.TempDir()
	images, err := NewImages(opts.DataDir, "")
	must(t, err)
	s := &Store{Images: images, Opts: opts}
	if settings != nil {
		must(t, WriteCopySettings(opts.DataDir, *settings))
	}
	mode, err := s.copySettings()
	must(t, err)
	vol := images.VolumeDir("vol-1")
	must(t, os.MkdirAll(vol, 0o750))
	startPod(t, vol)
	for i := range n {
		dst := filepath.Join(t.TempDir(), "copy")
		began := time.Now()
		_, err := s.CopyVolume("vol-1", dst)
		must(t, err)
		a, b, err := counters(dst)
		must(t, err)
		ok := b <= a && a <= b+1
		if !ok {
			torn++
		}
		t.Logf("copy %d (%s, settings %+v): a=%d b=%d consistent=%t", i, time.Since(began).Round(time.Millisecond), mode, a, b, ok)
	}
	return torn
}

// TestCopyVolumeIsCrashConsistent: a pod writes a then b, and every copy, paced as a real
// volume's copy is slow, holds b ≤ a ≤ b+1, because the pod is stopped while it runs: by
// default, and when the running storage's settings turn the freeze back on.
func TestCopyVolumeIsCrashConsistent(t *testing.T) {
	t.Run("by default", func(t *testing.T) {
		if torn := copies(t, Options{CopyPacing: copyPace}, nil, 10); torn > 0 {
			t.Errorf("%d of 10 copies taken with the pod frozen are torn", torn)
		}
	})
	t.Run("with the settings' freeze over the options' none", func(t *testing.T) {
		if torn := copies(t, Options{CopyFreeze: CopyFreezeNone}, &CopySettings{Freeze: CopyFreezeProcesses, Pacing: copyPace}, 10); torn > 0 {
			t.Errorf("%d of 10 copies taken with the pod frozen are torn", torn)
		}
	})
}

// TestCopyVolumeWithoutFreezeTears: the same copies without the freeze are torn, which is what
// makes the test above able to fail; by the options, or by the running storage's settings.
func TestCopyVolumeWithoutFreezeTears(t *testing.T) {
	t.Run("by the options", func(t *testing.T) {
		if torn := copies(t, Options{CopyFreeze: CopyFreezeNone, CopyPacing: copyPace}, nil, 10); torn == 0 {
			t.Error("none of 10 copies taken while the pod writes is torn: the copies do not show a torn copy, and the freeze's test proves nothing")
		}
	})
	t.Run("by the settings over the options' freeze", func(t *testing.T) {
		if torn := copies(t, Options{}, &CopySettings{Freeze: CopyFreezeNone, Pacing: copyPace}, 10); torn == 0 {
			t.Error("none of 10 copies taken while the pod writes is torn: the settings did not turn the freeze off")
		}
	})
}

func TestParseCopyFreeze(t *testing.T) {
	for _, c := range []struct {
		in   string
		want CopyFreezeMode
		err  bool
	}{
		{in: "", want: CopyFreezeProcesses},
		{in: "processes", want: CopyFreezeProcesses},
		{in: "none", want: CopyFreezeNone},
		{in: "off", err: true},
	} {
		got, err := ParseCopyFreeze(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseCopyFreeze(%q) = %q, %v; want %q, error %t", c.in, got, err, c.want, c.err)
		}
	}
}
