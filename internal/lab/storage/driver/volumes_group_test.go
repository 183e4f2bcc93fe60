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

// startTwinPod runs a pod's process as the lab kubelet does, with two volumes bind mounted in its
// own mount namespace, appending each counter to a in vol1 and then to b in vol2, from a child
// process forked for each counter. Any one instant of the two volumes has b ≤ a ≤ b+1.
func startTwinPod(t *testing.T, vol1, vol2 string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a pod's bind mounts need root, as the whole lab does: run the tests as root")
	}
	m1, m2 := filepath.Join(t.TempDir(), "m1"), filepath.Join(t.TempDir(), "m2")
	must(t, os.Mkdir(m1, 0o755))
	must(t, os.Mkdir(m2, 0o755))
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", fmt.Sprintf(
		"mount --bind %s %s && mount --bind %s %s && cd / && i=0; while :; do i=$((i+1)); (echo $i >> %[2]s/a; sleep 0.001; echo $i >> %[4]s/b); done",
		vol1, m1, vol2, m2))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := lastCounter(filepath.Join(vol2, "b")); err == nil && b > 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod's process does not write")
		}
	}
}

func lastCounter(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	return strconv.Atoi(string(lines[len(lines)-1]))
}

// twinCopy reads the counters of copies of vol1 (a) and vol2 (b) and reports whether they are
// of one instant.
func twinCopy(t *testing.T, what string, i int, d1, d2 string) bool {
	t.Helper()
	a, err := lastCounter(filepath.Join(d1, "a"))
	must(t, err)
	b, err := lastCounter(filepath.Join(d2, "b"))
	must(t, err)
	ok := b <= a && a <= b+1
	t.Logf("%s %d: a=%d b=%d one instant=%t", what, i, a, b, ok)
	return ok
}

// TestCopyVolumesTakesEveryVolumeAtOneInstant: a pod writes a counter to a volume and then to
// another. Copied together (CopyVolumes: every user of either stopped before the first file is
// copied), the copies are one instant every time; copied one after the other (CopyVolume each,
// as per-volume mirrors are), with copies as slow as a real volume's, they are not.
func TestCopyVolumesTakesEveryVolumeAtOneInstant(t *testing.T) {
	opts := Options{DataDir: t.TempDir(), CopyPacing: copyPace}
	images, err := NewImages(opts.DataDir, "")
	must(t, err)
	s := &Store{Images: images, Opts: opts}
	v1, v2 := images.VolumeDir("vol-1"), images.VolumeDir("vol-2")
	must(t, os.MkdirAll(v1, 0o750))
	must(t, os.MkdirAll(v2, 0o750))
	startTwinPod(t, v1, v2)
	var tornTogether, tornApart int
	for i := range 10 {
		d1, d2 := filepath.Join(t.TempDir(), "1"), filepath.Join(t.TempDir(), "2")
		_, err := s.CopyVolumes([]string{"vol-1", "vol-2"}, []string{d1, d2})
		must(t, err)
		if !twinCopy(t, "together", i, d1, d2) {
			tornTogether++
		}
		e1, e2 := filepath.Join(t.TempDir(), "1"), filepath.Join(t.TempDir(), "2")
		_, err = s.CopyVolume("vol-1", e1)
		must(t, err)
		_, err = s.CopyVolume("vol-2", e2)
		must(t, err)
		if !twinCopy(t, "apart", i, e1, e2) {
			tornApart++
		}
	}
	if tornTogether > 0 {
		t.Errorf("%d of 10 copies of both volumes taken together are not of one instant", tornTogether)
	}
	if tornApart == 0 {
		t.Error("none of 10 pairs of copies taken one after the other is torn: the test cannot tell one instant from two")
	}
}

func TestCopyVolumesRefusesAVolumeNamedTwice(t *testing.T) {
	images, err := NewImages(t.TempDir(), "")
	must(t, err)
	s := &Store{Images: images}
	if _, err := s.CopyVolumes([]string{"v", "v"}, []string{t.TempDir(), t.TempDir()}); err == nil {
		t.Fatal("CopyVolumes took the lock of one volume twice")
	}
}
