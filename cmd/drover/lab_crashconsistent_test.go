//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/writer"
)

const (
	// podWriterInterval is the time between two records of the writer pod below.
	podWriterInterval = 10 * time.Millisecond
	// podCopyPacing paces the copies: longer than the writer's interval, so that the writer
	// commits between the copy of a log and the copy of its index whenever it runs.
	podCopyPacing = 25 * time.Millisecond
	// frozenCopies is how many copies taken with the freeze must all hold the invariant.
	frozenCopies = 200
	// unfrozenCopies is how many copies are taken without it.
	unfrozenCopies = 10
)

// startWriterPod runs `drover lab writer` as the lab kubelet runs a pod's process: in a mount
// namespace of its own, its volume bind-mounted at another path, so that only the mount
// shows that it uses the volume.
func startWriterPod(t *testing.T, g Gomega, vol string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a pod's bind mount needs root, as the whole lab does: run the tests as root")
	}
	mnt := filepath.Join(t.TempDir(), "data")
	g.Expect(os.Mkdir(mnt, 0o750)).To(Succeed())
	var stderr bytes.Buffer
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", //nolint:gosec // the test binary itself
		fmt.Sprintf(`mount --bind %s %s && exec "$0" lab writer --volume data=%[2]s --interval %s`, vol, mnt, podWriterInterval), os.Args[0])
	cmd.Env = append(os.Environ(), runAsDroverEnv+"=1",
		writer.EnvNamespace+"=ns", writer.EnvPod+"=db-0", writer.EnvUID+"=0a1b2c3d-0000-4000-8000-000000000000")
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	g.Eventually(func() uint64 {
		w, err := records.VerifyWriter(vol, "ns.db-0.0a1b2c3d")
		if err != nil {
			return 0
		}
		return w.LastSeq
	}).WithTimeout(30*time.Second).Should(BeNumerically(">=", 10), "the writer pod commits: %s", &stderr)
}

// The lab's copies of a volume are crash-consistent: a real writer process commits each record
// to its log and then to the index beside it, so any instant of the volume has the index at
// most the log's last record. The lab's storage copies the volume file by file (paced as a real
// volume's copy takes time): without the freeze the writer commits between the log's copy and
// the index's, and the copy's index is ahead of its log; with the freeze (every process that
// has the volume mounted stopped for the copy) no copy ever is.
func TestTheLabsCopiesOfARealWritersVolumeTearWithoutTheFreezeAndNeverWithIt(t *testing.T) {
	g := NewWithT(t)
	dataDir := t.TempDir()
	images, err := driver.NewImages(dataDir, "")
	g.Expect(err).NotTo(HaveOccurred())
	vol := images.VolumeDir("vol-1")
	g.Expect(os.MkdirAll(vol, 0o750)).To(Succeed())
	startWriterPod(t, g, vol)

	copies := func(mode driver.CopyFreezeMode, n int) (torn int, first error) {
		s := &driver.Store{Images: images, Opts: driver.Options{DataDir: dataDir, CopyFreeze: mode, CopyPacing: podCopyPacing}}
		for i := range n {
			dst := filepath.Join(t.TempDir(), "copy")
			_, err := s.CopyVolume("vol-1", dst)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = records.Verify(dst)
			var ie *records.IndexError
			switch {
			case errors.As(err, &ie):
				torn++
				if first == nil {
					first = fmt.Errorf("copy %d: %w", i, err)
				}
			case err != nil:
				g.Expect(err).NotTo(HaveOccurred(), "copy %d", i)
			}
		}
		return torn, first
	}
	torn, first := copies(driver.CopyFreezeNone, unfrozenCopies)
	t.Logf("without the freeze: %d of %d copies torn; the first: %v", torn, unfrozenCopies, first)
	g.Expect(torn).To(BeNumerically(">", 0), "copies taken while the writer runs show a torn copy, so the freeze's test can fail")
	began := time.Now()
	torn, first = copies(driver.CopyFreezeProcesses, frozenCopies)
	t.Logf("with the freeze: %d of %d copies torn (%s)", torn, frozenCopies, time.Since(began).Round(time.Millisecond))
	g.Expect(torn).To(BeZero(), "a copy taken with the writer frozen is torn: %v", first)
}
