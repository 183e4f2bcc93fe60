//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/writer"
)

// writerProcess is a `drover lab writer` process of the pod ns/db-0 over the volumes a and b.
type writerProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}

func startWriterProcess(t *testing.T, g Gomega, a, b, statusDir string) *writerProcess {
	t.Helper()
	p := &writerProcess{cmd: exec.Command(os.Args[0], "lab", "writer", //nolint:gosec // the test binary itself
		"--volume", "data-a="+a, "--volume", "data-b="+b, "--interval", "20ms")}
	p.cmd.Env = append(os.Environ(), runAsDroverEnv+"=1",
		writer.EnvNamespace+"=ns", writer.EnvPod+"=db-0", writer.EnvUID+"=0a1b2c3d-0000-4000-8000-000000000000",
		writer.EnvStatusDir+"="+statusDir)
	p.cmd.Stderr = &p.stderr
	g.Expect(p.cmd.Start()).To(Succeed())
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// stop sends sig and returns the exit status.
func (p *writerProcess) stop(g Gomega, sig syscall.Signal) int {
	g.Expect(p.cmd.Process.Signal(sig)).To(Succeed())
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return p.cmd.ProcessState.ExitCode()
}

// writerLogs verifies both volumes of the writer: each holds its index invariant, and, the
// writer being stopped, the two are copies of one instant that hold the twin order.
func writerLogs(t *testing.T, g Gomega, id, a, b string) (records.WriterReport, records.WriterReport) {
	t.Helper()
	ra, err := records.Verify(a)
	g.Expect(err).NotTo(HaveOccurred())
	rb, err := records.Verify(b)
	g.Expect(err).NotTo(HaveOccurred())
	wa, okA := ra.Writer(id)
	wb, okB := rb.Writer(id)
	g.Expect(okA && okB).To(BeTrue(), "both volumes hold a log of %s", id)
	g.Expect(records.CheckTwins(wa, wb)).To(Succeed())
	for _, w := range []records.WriterReport{wa, wb} {
		g.Expect(w.Gaps).To(BeEmpty())
		g.Expect(w.Duplicates).To(BeZero())
		g.Expect(w.Corrupt).To(BeEmpty())
		g.Expect(w.Records).To(BeEquivalentTo(w.LastSeq))
	}
	t.Logf("A: records 1..%d, index %d; B: records 1..%d, index %d", wa.LastSeq, wa.Index, wb.LastSeq, wb.Index)
	return wa, wb
}

func TestLabWriterProcessCommitsRecordsStopsOnSIGTERMAndContinuesAfterARestart(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	a, b, statusDir := t.TempDir(), t.TempDir(), t.TempDir()
	const id = "ns.db-0.0a1b2c3d"
	status := func(g Gomega) writer.Status {
		st, err := writer.ReadStatus(writer.StatusFile(statusDir, "ns", "db-0"))
		g.Expect(err).NotTo(HaveOccurred())
		return st
	}
	written := func(atLeast uint64) func(g Gomega) {
		return func(g Gomega) {
			for _, v := range status(g).Volumes {
				g.Expect(v.LastSeq).To(BeNumerically(">=", atLeast), "volume %s", v.PVC)
			}
		}
	}

	first := startWriterProcess(t, g, a, b, statusDir)
	g.Eventually(written(10)).Should(Succeed(), "the writer commits records: %s", &first.stderr)
	g.Expect(first.stop(g, syscall.SIGTERM)).To(BeZero(), "exits 0 on SIGTERM: %s", &first.stderr)
	st := status(g)
	g.Expect(st.Running).To(BeFalse(), "its last status says it stopped")
	g.Expect(st.WriterID).To(Equal(id))
	wa, wb := writerLogs(t, g, id, a, b)
	g.Expect(wb.LastSeq).To(Equal(wa.LastSeq), "a SIGTERM ends the writer between rounds: both volumes hold its last record")
	for i, w := range []records.WriterReport{wa, wb} {
		g.Expect(w.Index).To(Equal(w.LastSeq), "the index names the last record")
		g.Expect(st.Volumes[i].LastSeq).To(Equal(w.LastSeq), "the status names the last record of %s", st.Volumes[i].PVC)
		g.Expect(st.Volumes[i].Written).To(Equal(w.LastSeq))
	}

	// A crash: the writer killed wherever it is.
	second := startWriterProcess(t, g, a, b, statusDir)
	g.Eventually(written(wa.LastSeq+10)).Should(Succeed(), "a restarted writer continues: %s", &second.stderr)
	g.Expect(second.stop(g, syscall.SIGKILL)).To(Equal(-1))
	crashedA, _ := writerLogs(t, g, id, a, b)

	third := startWriterProcess(t, g, a, b, statusDir)
	g.Eventually(written(crashedA.LastSeq+10)).Should(Succeed(), "a writer restarted after a crash continues: %s", &third.stderr)
	g.Expect(third.stop(g, syscall.SIGTERM)).To(BeZero(), "exits 0 on SIGTERM: %s", &third.stderr)
	wa, wb = writerLogs(t, g, id, a, b)
	g.Expect(wb.LastSeq).To(Equal(wa.LastSeq))
	st = status(g)
	g.Expect(st.Running).To(BeFalse())
	g.Expect(st.Volumes[0].LastSeq).To(Equal(wa.LastSeq))
	g.Expect(st.Volumes[0].Written).To(Equal(wa.LastSeq-crashedA.LastSeq), "the third writer wrote from the record after the crash's last")
}

// copyVolume copies the volume from into to file by file in file-name order, as the lab's
// storage copies a volume, calling between after each file: a copy that takes time.
func copyVolume(g Gomega, from, to string, between func(copied string)) {
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(path) //nolint:gosec // the test's own volume
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, rel), raw, 0o600); err != nil {
			return err
		}
		between(rel)
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
}

// liveIndex is the record the index of the writer's log names in a live volume.
func liveIndex(g Gomega, dir, id string) uint64 {
	w, err := records.VerifyWriter(dir, id)
	g.Expect(err).NotTo(HaveOccurred())
	return w.Index
}

// liveLast is the writer's last record in a live volume.
func liveLast(g Gomega, dir, id string) uint64 {
	w, err := records.VerifyWriter(dir, id)
	g.Expect(err).NotTo(HaveOccurred())
	return w.LastSeq
}

// The dependent records catch a torn copy of a real process's volumes: a copy of a volume
// whose log is copied before the writer's next commits and its index after holds an index ahead
// of its log, and two volumes copied one after the other break the twin order. The same paced
// copies of the process stopped (SIGSTOP, as a freezer stops it) never do.
func TestLabWriterProcessVolumesCopiedWhileItWritesAreTornAndFrozenAreNot(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	a, b := t.TempDir(), t.TempDir()
	const id = "ns.db-0.0a1b2c3d"
	p := startWriterProcess(t, g, a, b, t.TempDir())
	g.Eventually(func() uint64 { return liveLast(g, b, id) }).Should(BeNumerically(">=", 5), "the writer commits: %s", &p.stderr)

	// One volume: the writer commits between the copy of its log and of its index.
	torn := t.TempDir()
	copyVolume(g, a, torn, func(rel string) {
		if filepath.Ext(rel) == ".log" {
			// The live index, not the live log: the writer commits to its log first, and an
			// index not yet past the copied log would make an intact copy.
			copied := liveLast(g, torn, id)
			g.Eventually(func() uint64 { return liveIndex(g, a, id) }).Should(BeNumerically(">", copied))
		}
	})
	_, err := records.Verify(torn)
	var ie *records.IndexError
	g.Expect(errors.As(err, &ie)).To(BeTrue(), "the torn copy breaks the index invariant: %v", err)
	t.Logf("a torn copy of one volume: %v", err)

	// Two volumes, each copied at its own instant: the writer commits between the copies.
	tornA, tornB := t.TempDir(), t.TempDir()
	copyVolume(g, a, tornA, func(string) {})
	copiedA := liveLast(g, tornA, id)
	g.Eventually(func() uint64 { return liveLast(g, b, id) }).Should(BeNumerically(">", copiedA+1))
	copyVolume(g, b, tornB, func(string) {})
	wa, err := records.VerifyWriter(tornA, id)
	g.Expect(err).NotTo(HaveOccurred())
	wb, err := records.VerifyWriter(tornB, id)
	g.Expect(err).NotTo(HaveOccurred())
	err = records.CheckTwins(wa, wb)
	g.Expect(err).To(HaveOccurred(), "copies of A and B taken at different instants break the twin order")
	t.Logf("copies of two volumes at two instants: %v", err)

	// Frozen: the same copies, paced, of the stopped process.
	const frozenCopies = 10
	for i := range frozenCopies {
		g.Expect(p.cmd.Process.Signal(syscall.SIGSTOP)).To(Succeed())
		g.Eventually(func() string { return processState(g, p.cmd.Process.Pid) }).Should(Equal("T"))
		copyA, copyB := t.TempDir(), t.TempDir()
		pace := func(string) { time.Sleep(20 * time.Millisecond) }
		copyVolume(g, a, copyA, pace)
		copyVolume(g, b, copyB, pace)
		g.Expect(p.cmd.Process.Signal(syscall.SIGCONT)).To(Succeed())
		ra, err := records.Verify(copyA)
		g.Expect(err).NotTo(HaveOccurred(), "frozen copy %d of A", i)
		rb, err := records.Verify(copyB)
		g.Expect(err).NotTo(HaveOccurred(), "frozen copy %d of B", i)
		wa, _ := ra.Writer(id)
		wb, _ := rb.Writer(id)
		g.Expect(records.CheckTwins(wa, wb)).To(Succeed(), "frozen copy %d", i)
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d paced copies of the stopped process: index and twin order held in every one", frozenCopies)
	g.Expect(p.stop(g, syscall.SIGTERM)).To(BeZero(), "%s", &p.stderr)
}

// processState is the state letter of a process in /proc/PID/stat (R, S, D, T, ...).
func processState(g Gomega, pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	g.Expect(err).NotTo(HaveOccurred())
	// pid (comm) state ...: the comm may hold spaces, the state follows its closing parenthesis.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+1:])
	return strings.Fields(rest)[0]
}
