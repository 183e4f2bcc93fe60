package pgsql

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestReadRunsCountsEachRunsCommitsFromItsLogFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	// Two threads of one run, a second run cut by a kill in the middle of a line, a failed
	// transaction, and files that are not logs.
	write("1796573445639927497.25652", "0 1 38488 0 1796573445 714539\n1 1 40470 0 1796573445 716540\n")
	write("1796573445639927497.25652.1", "0 2 3583 0 1796573446 718172\n0 3 failed 0 1796573446 900000\n")
	write("1796573500000000000.7", "0 1 1000 0 1796573500 100000\n1 1 1200 0 1796573500 2000")
	write("tpcb-tagged.sql", "BEGIN;\n")
	write("12.1", "0 1 1000 0 1796573500 100000\n")
	runs, err := ReadRuns(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runs).To(HaveLen(2))
	first := runs["1796573445639927497"]
	g.Expect(first.Committed).To(HaveLen(3), "both threads' commits, not the failed transaction")
	g.Expect(first.Started()).To(Equal(time.Unix(0, 1796573445639927497)))
	g.Expect(first.CommittedBy(time.Unix(1796573446, 0))).To(BeEquivalentTo(2))
	g.Expect(runs["1796573500000000000"].Committed).To(Equal([]time.Time{time.Unix(1796573500, 100000000)}),
		"a last line without its newline was cut by a kill")

	none, err := ReadRuns(filepath.Join(dir, "missing"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(BeEmpty())
}

func TestSumsHoldOnlyWhenAllFourAreEqual(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Sums{Accounts: 5, Tellers: 5, Branches: 5, History: 5}.Holds()).To(BeTrue())
	g.Expect(Sums{Accounts: 5, Tellers: 5, Branches: 5, History: 4}.Holds()).To(BeFalse())
	g.Expect(Sums{Accounts: 4, Tellers: 5, Branches: 5, History: 5}.Holds()).To(BeFalse())
}
