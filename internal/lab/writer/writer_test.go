package writer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/records"
)

const testID = "ns.db-0.0a1b2c3d"

// checkedDirs are directories that check, at every Open, the invariants the writer keeps
// between its writes: each volume's index and the twin order of consecutive volumes. rejects
// makes Open refuse the volumes it names.
type checkedDirs struct {
	g       Gomega
	dirs    Dirs
	rejects map[int]bool
	// unchecked leaves the invariants unchecked at Open.
	unchecked bool
	opens     int
}

func (c *checkedDirs) Open(i int) (string, func(), error) {
	c.opens++
	var prev records.WriterReport
	for j, dir := range c.dirs {
		if c.unchecked {
			break
		}
		rep, err := records.Verify(dir)
		c.g.Expect(err).NotTo(HaveOccurred(), "volume %d before open %d", j, c.opens)
		w, _ := rep.Writer(testID)
		if j > 0 {
			c.g.Expect(records.CheckTwins(prev, w)).To(Succeed(), "volumes %d and %d before open %d", j-1, j, c.opens)
		}
		prev = w
	}
	if c.rejects[i] {
		return "", nil, ErrRejected
	}
	return c.dirs.Open(i)
}

// commitUpTo commits a writer's records 1..last to dir, as an earlier run of it did.
func commitUpTo(g Gomega, dir string, last uint64) {
	for s := uint64(1); s <= last; s++ {
		g.Expect(records.Commit(dir, testID, s, 16, time.Now(), false)).To(Succeed())
	}
}

func lastSeq(g Gomega, dir string) uint64 {
	w, err := records.VerifyWriter(dir, testID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.CheckIndex()).To(Succeed())
	g.Expect(w.Index).To(Equal(w.LastSeq), "the index names the last record")
	return w.LastSeq
}

func newTestWriter(g Gomega, vols Volumes, n int) *Writer {
	st := Status{WriterID: testID}
	for i := range n {
		st.Volumes = append(st.Volumes, VolumeStatus{PVC: fmt.Sprintf("v%d", i)})
	}
	w, err := New(st, vols, Options{Interval: MinInterval, PayloadSize: 16})
	g.Expect(err).NotTo(HaveOccurred())
	return w
}

func TestWriterRounds(t *testing.T) {
	cases := []struct {
		name string
		// before is each volume's last record from an earlier run; rejects the volumes that
		// refuse writes.
		before  []uint64
		rejects map[int]bool
		// torn: the volumes start broken, so the invariants are checked at the end only.
		torn   bool
		rounds int
		want   []uint64
	}{
		{name: "a new writer starts its log at 1", before: []uint64{0}, rounds: 3, want: []uint64{3}},
		{name: "a restarted writer continues its log", before: []uint64{7}, rounds: 2, want: []uint64{9}},
		{name: "two volumes take every record, the first before the second", before: []uint64{0, 0}, rounds: 4, want: []uint64{3, 3}},
		{name: "a restart between the two commits of a record completes it in the second volume first",
			before: []uint64{5, 4}, rounds: 3, want: []uint64{7, 7}},
		{name: "a second volume ahead (a torn copy restored) waits until the first catches up",
			before: []uint64{3, 5}, rounds: 4, want: []uint64{6, 6}, torn: true},
		{name: "a rejected second volume holds the first at its last record",
			before: []uint64{4, 4}, rejects: map[int]bool{1: true}, rounds: 3, want: []uint64{4, 4}},
		{name: "a rejected first volume holds the second where it is",
			before: []uint64{4, 3}, rejects: map[int]bool{0: true}, rounds: 3, want: []uint64{4, 3}},
		{name: "three volumes keep the order pairwise", before: []uint64{2, 2, 1}, rounds: 3, want: []uint64{4, 4, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vols := &checkedDirs{g: g, rejects: tc.rejects, unchecked: tc.torn}
			for _, last := range tc.before {
				dir := t.TempDir()
				commitUpTo(g, dir, last)
				vols.dirs = append(vols.dirs, dir)
			}
			w := newTestWriter(g, vols, len(tc.before))
			for range tc.rounds {
				w.round(context.Background())
			}
			var got []uint64
			for _, dir := range vols.dirs {
				got = append(got, lastSeq(g, dir))
			}
			g.Expect(got).To(Equal(tc.want))
			for i := range tc.before {
				v := w.Status().Volumes[i]
				g.Expect(v.Written).To(Equal(tc.want[i]-tc.before[i]), "volume %d counts what it wrote", i)
				if tc.rejects[i] {
					g.Expect(v.Rejected).To(BeNumerically("==", tc.rounds))
				}
			}
		})
	}
}

// A volume whose writes fail is read again once they succeed: a resync may have replaced it.
func TestWriterRereadsAVolumeAfterAFailure(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	fail := errors.New("disk full")
	failing := true
	vols := volumesFunc(func(int) (string, func(), error) {
		if failing {
			return "", nil, fail
		}
		return dir, func() {}, nil
	})
	w := newTestWriter(g, vols, 1)
	w.round(context.Background())
	g.Expect(w.Status().Volumes[0].Failed).To(BeEquivalentTo(1))
	g.Expect(w.Status().Volumes[0].LastError).To(Equal("disk full"))
	// Meanwhile the volume was replaced by a copy holding records 1..10.
	commitUpTo(g, dir, 10)
	failing = false
	w.round(context.Background())
	g.Expect(lastSeq(g, dir)).To(BeEquivalentTo(11))
}

type volumesFunc func(int) (string, func(), error)

func (f volumesFunc) Open(i int) (string, func(), error) { return f(i) }

// Run writes its status at start and, once its context ends, a last one that says it stopped.
func TestWriterRunWritesItsStatusUntilItStops(t *testing.T) {
	g := NewWithT(t)
	dir, statusDir := t.TempDir(), t.TempDir()
	path := StatusFile(statusDir, "ns", "db-0")
	st := Status{Namespace: "ns", Pod: "db-0", UID: "0a1b2c3d-ffff", WriterID: ID("ns", "db-0", "0a1b2c3d-ffff"),
		Volumes: []VolumeStatus{{PVC: "data-db-0", Dir: dir}}}
	g.Expect(st.WriterID).To(Equal(testID))
	w, err := New(st, Dirs{dir}, Options{Interval: MinInterval, PayloadSize: 16, Sync: true, StatusPath: path, StatusInterval: 20 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	g.Eventually(func(g Gomega) {
		got, err := ReadStatus(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Running).To(BeTrue())
		g.Expect(got.Volumes[0].LastSeq).To(BeNumerically(">=", 5))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	cancel()
	<-done
	got, err := ReadStatus(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Running).To(BeFalse())
	g.Expect(got.Interval).To(Equal(MinInterval.String()))
	g.Expect(got.Volumes[0].LastSeq).To(Equal(lastSeq(g, dir)), "the last status names the last record")
	g.Expect(filepath.Base(path)).To(Equal("ns.db-0.json"))
}
