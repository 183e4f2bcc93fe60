package records

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// commitSeqs commits the records seqs of writer to the volume dir, as a writer does.
func commitSeqs(g Gomega, dir, writer string, seqs ...uint64) {
	for _, s := range seqs {
		g.Expect(Commit(dir, writer, s, 16, t0.Add(time.Duration(s)*time.Millisecond), false)).To(Succeed())
	}
}

// copyFile copies one file of a volume into another volume, as a copy of the volume's files
// does file by file.
func copyFile(g Gomega, from, to, rel string) {
	raw, err := os.ReadFile(filepath.Join(from, rel))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o750)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(to, rel), raw, 0o600)).To(Succeed())
}

func TestCheckIndex(t *testing.T) {
	const w = "ns.pod.0a1b2c3d"
	logRel, indexRel := filepath.Join(Dir, w+".log"), filepath.Join(Dir, w+".log.index")
	cases := []struct {
		name string
		// setup fills the volume dst; src is a scratch volume to copy from.
		setup     func(g Gomega, src, dst string)
		wantIndex uint64
		wantLast  uint64
		wantErr   bool
	}{{
		name:      "a writer that commits keeps the index at its last record",
		setup:     func(g Gomega, _, dst string) { commitSeqs(g, dst, w, seqRange(1, 5)...) },
		wantIndex: 5, wantLast: 5,
	}, {
		name:     "a log without an index holds the invariant",
		setup:    func(g Gomega, _, dst string) { appendSeqs(g, dst, w, seqRange(1, 3)...) },
		wantLast: 3,
	}, {
		name: "a crash between a record and its index leaves the index one behind, which holds",
		setup: func(g Gomega, _, dst string) {
			commitSeqs(g, dst, w, seqRange(1, 4)...)
			appendSeqs(g, dst, w, 5)
		},
		wantIndex: 4, wantLast: 5,
	}, {
		name: "a copy of one instant holds it",
		setup: func(g Gomega, src, dst string) {
			commitSeqs(g, src, w, seqRange(1, 5)...)
			copyFile(g, src, dst, logRel)
			copyFile(g, src, dst, indexRel)
			commitSeqs(g, src, w, 6, 7)
		},
		wantIndex: 5, wantLast: 5,
	}, {
		name: "a copy that takes the index before the log holds it, the log being newer",
		setup: func(g Gomega, src, dst string) {
			commitSeqs(g, src, w, seqRange(1, 3)...)
			copyFile(g, src, dst, indexRel)
			commitSeqs(g, src, w, 4, 5)
			copyFile(g, src, dst, logRel)
		},
		wantIndex: 3, wantLast: 5,
	}, {
		name: "a torn copy, the log copied before the writer's last commits and the index after, breaks it",
		setup: func(g Gomega, src, dst string) {
			commitSeqs(g, src, w, seqRange(1, 3)...)
			copyFile(g, src, dst, logRel)
			commitSeqs(g, src, w, 4, 5)
			copyFile(g, src, dst, indexRel)
		},
		wantIndex: 5, wantLast: 3, wantErr: true,
	}, {
		name: "an index whose last line was cut short is read at the line before",
		setup: func(g Gomega, _, dst string) {
			appendSeqs(g, dst, w, seqRange(1, 3)...)
			g.Expect(os.WriteFile(IndexPath(dst, w), []byte("1\n2\n3"), 0o600)).To(Succeed())
		},
		wantIndex: 2, wantLast: 3,
	}, {
		name: "a commit after a cut index line keeps the index whole",
		setup: func(g Gomega, _, dst string) {
			appendSeqs(g, dst, w, seqRange(1, 3)...)
			g.Expect(os.WriteFile(IndexPath(dst, w), []byte("1\n2\n3"), 0o600)).To(Succeed())
			commitSeqs(g, dst, w, 4)
		},
		wantIndex: 4, wantLast: 4,
	}, {
		name: "a damaged index breaks it",
		setup: func(g Gomega, _, dst string) {
			commitSeqs(g, dst, w, seqRange(1, 3)...)
			g.Expect(os.WriteFile(IndexPath(dst, w), []byte("1\n2\nx3\n"), 0o600)).To(Succeed())
		},
		wantLast: 3, wantErr: true,
	}, {
		name: "an index ahead of a log whose last record is corrupt breaks it",
		setup: func(g Gomega, _, dst string) {
			commitSeqs(g, dst, w, seqRange(1, 5)...)
			editLog(g, dst, w, func(s string) string { return s[:len(s)-3] + "0\n" })
		},
		wantIndex: 5, wantLast: 4, wantErr: true,
	}, {
		name: "an index without its log breaks it",
		setup: func(g Gomega, src, dst string) {
			commitSeqs(g, src, w, 1, 2)
			copyFile(g, src, dst, indexRel)
		},
		wantIndex: 2, wantErr: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			src, dst := t.TempDir(), t.TempDir()
			tc.setup(g, src, dst)
			report, err := Verify(dst)
			g.Expect(report.Writers).To(HaveLen(1))
			got := report.Writers[0]
			g.Expect([]uint64{got.Index, got.LastSeq}).To(Equal([]uint64{tc.wantIndex, tc.wantLast}), "index and last record")
			var ie *IndexError
			if tc.wantErr {
				g.Expect(errors.As(err, &ie)).To(BeTrue(), "Verify returns an IndexError: %v", err)
				g.Expect(ie.Writer).To(Equal(w))
				g.Expect(CheckIndex(dst)).To(MatchError(ContainSubstring(w)))
				t.Logf("judged: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(CheckIndex(dst)).To(Succeed())
		})
	}
}

// While a writer commits, a reader of the live volume never finds its index ahead of its log:
// Verify reads the index before the log.
func TestVerifyOfALiveVolumeKeepsTheIndexInvariant(t *testing.T) {
	g := NewWithT(t)
	const w = "ns.pod.0a1b2c3d"
	dir := t.TempDir()
	done, stop := make(chan error, 1), make(chan struct{})
	go func() {
		for s := uint64(1); s <= 3000; s++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := Commit(dir, w, s, 16, t0, false); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// A failed read ends the test early: stop the writer before its directory is removed.
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
			if err := <-done; err != nil {
				t.Logf("the writer stopped: %v", err)
			}
		}
	})
	reads := 0
	for {
		select {
		case err := <-done:
			close(stop)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(CheckIndex(dir)).To(Succeed())
			t.Logf("%d reads of the live volume, none found the index ahead", reads)
			return
		default:
		}
		_, err := Verify(dir)
		g.Expect(err).NotTo(HaveOccurred(), "read %d", reads)
		reads++
	}
}

func TestCheckTwins(t *testing.T) {
	const w = "ns.pod.0a1b2c3d"
	cases := []struct {
		name         string
		lastA, lastB uint64
		wantErr      bool
	}{
		{name: "neither holds a record", lastA: 0, lastB: 0},
		{name: "the first record is in A only", lastA: 1, lastB: 0},
		{name: "both hold the same last record", lastA: 5, lastB: 5},
		{name: "A holds the next record before B", lastA: 6, lastB: 5},
		{name: "A two records ahead of B breaks it", lastA: 7, lastB: 5, wantErr: true},
		{name: "B ahead of A breaks it", lastA: 5, lastB: 6, wantErr: true},
		{name: "B holds a record A never had", lastA: 0, lastB: 1, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckTwins(WriterReport{Writer: w, LastSeq: tc.lastA}, WriterReport{Writer: w, LastSeq: tc.lastB})
			if !tc.wantErr {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var te *TwinError
			g.Expect(errors.As(err, &te)).To(BeTrue(), "a TwinError: %v", err)
			g.Expect(*te).To(Equal(TwinError{Writer: w, LastA: tc.lastA, LastB: tc.lastB}))
		})
	}
}

// Copies of a writer's two volumes taken at one instant keep B ≤ A ≤ B + 1; copies taken at
// different instants, as per-volume mirroring takes them, may break it.
func TestCheckTwinsOfCopies(t *testing.T) {
	const w = "ns.pod.0a1b2c3d"
	commit := func(g Gomega, a, b string, seqs ...uint64) {
		for _, s := range seqs {
			commitSeqs(g, a, w, s)
			commitSeqs(g, b, w, s)
		}
	}
	copyVolume := func(g Gomega, from, to string) {
		copyFile(g, from, to, filepath.Join(Dir, w+".log"))
		copyFile(g, from, to, filepath.Join(Dir, w+".log.index"))
	}
	cases := []struct {
		name    string
		setup   func(g Gomega, a, b, copyA, copyB string)
		wantErr bool
	}{{
		name: "copies of one instant, between the two commits of a record, hold it",
		setup: func(g Gomega, a, b, copyA, copyB string) {
			commit(g, a, b, seqRange(1, 4)...)
			commitSeqs(g, a, w, 5)
			copyVolume(g, a, copyA)
			copyVolume(g, b, copyB)
		},
	}, {
		name: "A copied before the writer's last records and B after breaks it",
		setup: func(g Gomega, a, b, copyA, copyB string) {
			commit(g, a, b, seqRange(1, 4)...)
			copyVolume(g, a, copyA)
			commit(g, a, b, 5, 6)
			copyVolume(g, b, copyB)
		},
		wantErr: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a, b, copyA, copyB := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
			tc.setup(g, a, b, copyA, copyB)
			ra, err := Verify(copyA)
			g.Expect(err).NotTo(HaveOccurred(), "each copy holds its index invariant")
			rb, err := Verify(copyB)
			g.Expect(err).NotTo(HaveOccurred(), "each copy holds its index invariant")
			wa, _ := ra.Writer(w)
			wb, _ := rb.Writer(w)
			err = CheckTwins(wa, wb)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				t.Logf("judged: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}
