package records

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// appendSeqs appends the records seqs of writer to the volume dir, one millisecond apart.
func appendSeqs(g Gomega, dir, writer string, seqs ...uint64) {
	for _, s := range seqs {
		g.Expect(Append(dir, writer, s, 16, t0.Add(time.Duration(s)*time.Millisecond))).To(Succeed())
	}
}

func seqRange(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// editLog rewrites writer's log through edit.
func editLog(g Gomega, dir, writer string, edit func(string) string) {
	path := LogPath(dir, writer)
	raw, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(path, []byte(edit(string(raw))), 0o600)).To(Succeed())
}

// summary is the part of a WriterReport the tests check.
type summary struct {
	Records      int
	First, Last  uint64
	Gaps         []Range
	Missing      uint64
	Duplicates   int
	CorruptLines []int
	Torn         bool
}

func summarise(w WriterReport) summary {
	s := summary{
		Records: w.Records, First: w.FirstSeq, Last: w.LastSeq, Gaps: w.Gaps, Missing: w.Missing,
		Duplicates: w.Duplicates, Torn: w.Torn,
	}
	for _, c := range w.Corrupt {
		s.CorruptLines = append(s.CorruptLines, c.Line)
	}
	return s
}

func TestVerifyRecords(t *testing.T) {
	const w = "ns.pod.0a1b2c3d"
	cases := []struct {
		name  string
		setup func(g Gomega, dir string)
		want  summary
	}{{
		name:  "records appended in order verify with no gaps",
		setup: func(g Gomega, dir string) { appendSeqs(g, dir, w, seqRange(1, 5)...) },
		want:  summary{Records: 5, First: 1, Last: 5},
	}, {
		name:  "missing sequence numbers are a gap",
		setup: func(g Gomega, dir string) { appendSeqs(g, dir, w, 1, 2, 5, 6, 8) },
		want:  summary{Records: 5, First: 1, Last: 8, Gaps: []Range{{3, 4}, {7, 7}}, Missing: 3},
	}, {
		name:  "a log that lost its beginning has a gap from 1",
		setup: func(g Gomega, dir string) { appendSeqs(g, dir, w, 3, 4) },
		want:  summary{Records: 2, First: 3, Last: 4, Gaps: []Range{{1, 2}}, Missing: 2},
	}, {
		name: "an altered record is corrupt and leaves a gap",
		setup: func(g Gomega, dir string) {
			appendSeqs(g, dir, w, seqRange(1, 3)...)
			editLog(g, dir, w, func(s string) string {
				lines := strings.Split(s, "\n")
				lines[1] = strings.Replace(lines[1], " 2026-", " 2027-", 1)
				return strings.Join(lines, "\n")
			})
		},
		want: summary{Records: 2, First: 1, Last: 3, Gaps: []Range{{2, 2}}, Missing: 1, CorruptLines: []int{2}},
	}, {
		name: "a line that is not a record is corrupt",
		setup: func(g Gomega, dir string) {
			appendSeqs(g, dir, w, 1)
			editLog(g, dir, w, func(s string) string { return s + "not a record\n" })
			appendSeqs(g, dir, w, 2)
		},
		want: summary{Records: 2, First: 1, Last: 2, CorruptLines: []int{2}},
	}, {
		name: "a torn last line is torn, not corrupt",
		setup: func(g Gomega, dir string) {
			appendSeqs(g, dir, w, seqRange(1, 3)...)
			editLog(g, dir, w, func(s string) string { return s[:len(s)-10] })
		},
		want: summary{Records: 2, First: 1, Last: 2, Torn: true},
	}, {
		name: "an append after a torn line keeps the new record whole and the torn one becomes corrupt",
		setup: func(g Gomega, dir string) {
			appendSeqs(g, dir, w, seqRange(1, 2)...)
			editLog(g, dir, w, func(s string) string { return s[:len(s)-10] })
			appendSeqs(g, dir, w, 3)
		},
		want: summary{Records: 2, First: 1, Last: 3, Gaps: []Range{{2, 2}}, Missing: 1, CorruptLines: []int{2}},
	}, {
		name:  "a sequence number written twice is a duplicate",
		setup: func(g Gomega, dir string) { appendSeqs(g, dir, w, 1, 2, 2, 3) },
		want:  summary{Records: 3, First: 1, Last: 3, Duplicates: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			tc.setup(g, dir)
			report, err := Verify(dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(report.Writers).To(HaveLen(1))
			g.Expect(report.Writers[0].Writer).To(Equal(w))
			g.Expect(summarise(report.Writers[0])).To(Equal(tc.want))
			g.Expect(report.Writers[0].LastWrite).To(Equal(t0.Add(time.Duration(tc.want.Last) * time.Millisecond)))
		})
	}
}

func TestVerifyRecordsOfVolumes(t *testing.T) {
	t.Run("a volume without records has an empty report", func(t *testing.T) {
		g := NewWithT(t)
		report, err := Verify(t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(report.Writers).To(BeEmpty())
	})
	t.Run("a missing volume is an error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Verify(filepath.Join(t.TempDir(), "gone"))
		g.Expect(err).To(HaveOccurred())
	})
	t.Run("every writer of a volume is reported, by writer id", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		appendSeqs(g, dir, "b", 1, 2)
		appendSeqs(g, dir, "a", 1)
		report, err := Verify(dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(report.Writers).To(HaveLen(2))
		g.Expect(report.Writers[0].Writer).To(Equal("a"))
		g.Expect(report.Writers[1].LastSeq).To(Equal(uint64(2)))
	})
}

func TestAppendRecord(t *testing.T) {
	cases := []struct {
		name   string
		dir    func(t *testing.T) string
		writer string
		seq    uint64
	}{
		{name: "a writer id with a slash is refused", dir: func(t *testing.T) string { return t.TempDir() }, writer: "a/b", seq: 1},
		{name: "a writer id with a space is refused", dir: func(t *testing.T) string { return t.TempDir() }, writer: "a b", seq: 1},
		{name: "sequence number 0 is refused", dir: func(t *testing.T) string { return t.TempDir() }, writer: "a", seq: 0},
		{name: "a missing volume is not created", dir: func(t *testing.T) string { return filepath.Join(t.TempDir(), "gone") }, writer: "a", seq: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := tc.dir(t)
			g.Expect(Append(dir, tc.writer, tc.seq, 8, t0)).NotTo(Succeed())
		})
	}
	t.Run("a record is one line of five fields with the payload size asked for", func(t *testing.T) {
		g := NewWithT(t)
		line := string(Format("w", 7, 256, t0))
		g.Expect(line).To(HaveSuffix("\n"))
		fields := strings.Fields(line)
		g.Expect(fields).To(HaveLen(5))
		g.Expect(fields[:3]).To(Equal([]string{"7", "w", "2026-05-01T12:00:00Z"}))
		g.Expect(fields[3]).To(HaveLen(256))
		g.Expect(fields[4]).To(HaveLen(8))
	})
}

// report builds a report of one writer holding 1..last except gaps.
func report(writer string, last uint64, gaps ...Range) WriterReport {
	w := WriterReport{Writer: writer, LastSeq: last, Gaps: gaps, Records: int(last)}
	for _, g := range gaps {
		w.Records -= int(g.Len())
	}
	return w
}

func TestCompareRecords(t *testing.T) {
	cases := []struct {
		name      string
		a, b      Report
		identical bool
		want      []WriterDivergence
		describe  []string
	}{{
		name:      "identical copies do not diverge",
		a:         Report{Writers: []WriterReport{report("x", 10)}},
		b:         Report{Writers: []WriterReport{report("x", 10)}},
		identical: true,
		want:      []WriterDivergence{{Writer: "x", LastCommonSeq: 10}},
		describe:  []string{"identical up to 10"},
	}, {
		name:     "a lagging copy misses the newest records",
		a:        Report{Writers: []WriterReport{report("x", 1050)}},
		b:        Report{Writers: []WriterReport{report("x", 1042)}},
		want:     []WriterDivergence{{Writer: "x", LastCommonSeq: 1042, OnlyInA: []Range{{1043, 1050}}, OnlyInACount: 8}},
		describe: []string{"last common record 1042; b is missing 1043..1050 (8 records)"},
	}, {
		name: "diverged copies each have records the other lacks",
		// a kept writing x after the last sync; b's copy of x stopped there and a new writer y
		// wrote on b, as after a failover.
		a: Report{Writers: []WriterReport{report("x", 100)}},
		b: Report{Writers: []WriterReport{report("x", 80), report("y", 12)}},
		want: []WriterDivergence{
			{Writer: "x", LastCommonSeq: 80, OnlyInA: []Range{{81, 100}}, OnlyInACount: 20},
			{Writer: "y", OnlyInB: []Range{{1, 12}}, OnlyInBCount: 12},
		},
		describe: []string{
			"last common record 80; b is missing 81..100 (20 records)",
			"no common record; a is missing 1..12 (12 records)",
		},
	}, {
		name:     "a record lost in the middle of one copy is missing there only",
		a:        Report{Writers: []WriterReport{report("x", 9)}},
		b:        Report{Writers: []WriterReport{report("x", 9, Range{4, 5})}},
		want:     []WriterDivergence{{Writer: "x", LastCommonSeq: 9, OnlyInA: []Range{{4, 5}}, OnlyInACount: 2}},
		describe: []string{"last common record 9; b is missing 4..5 (2 records)"},
	}, {
		name:     "gaps both copies have are not a divergence",
		a:        Report{Writers: []WriterReport{report("x", 9, Range{1, 2}, Range{6, 6})}},
		b:        Report{Writers: []WriterReport{report("x", 7, Range{1, 3}, Range{6, 6})}},
		want:     []WriterDivergence{{Writer: "x", LastCommonSeq: 7, OnlyInA: []Range{{3, 3}, {8, 9}}, OnlyInACount: 3}},
		describe: []string{"last common record 7; b is missing 3, 8..9 (3 records)"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Compare(tc.a, tc.b)
			g.Expect(d.Identical).To(Equal(tc.identical))
			g.Expect(d.Writers).To(Equal(tc.want))
			for i, want := range tc.describe {
				g.Expect(d.Writers[i].Describe("a", "b")).To(Equal(want))
			}
		})
	}
}

func TestCompareRecordsOfVerifiedCopies(t *testing.T) {
	t.Run("a copy of a volume taken mid-way lags the original by the records written since", func(t *testing.T) {
		g := NewWithT(t)
		src, dst := t.TempDir(), t.TempDir()
		appendSeqs(g, src, "x", seqRange(1, 20)...)
		raw, err := os.ReadFile(LogPath(src, "x"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.MkdirAll(filepath.Join(dst, Dir), 0o750)).To(Succeed())
		g.Expect(os.WriteFile(LogPath(dst, "x"), raw, 0o600)).To(Succeed())
		appendSeqs(g, src, "x", seqRange(21, 25)...)

		a, err := Verify(src)
		g.Expect(err).NotTo(HaveOccurred())
		b, err := Verify(dst)
		g.Expect(err).NotTo(HaveOccurred())
		d := Compare(a, b)
		g.Expect(d.Identical).To(BeFalse())
		g.Expect(d.Writers[0].Describe("east", "west")).To(Equal("last common record 20; west is missing 21..25 (5 records)"))
	})
}
