package records

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Report is what Verify found in a volume: one entry per writer, ordered by writer id.
type Report struct {
	Writers []WriterReport `json:"writers"`
}

// Writer returns the report of writerID, and whether the volume has a log of it.
func (r Report) Writer(writerID string) (WriterReport, bool) {
	for _, w := range r.Writers {
		if w.Writer == writerID {
			return w, true
		}
	}
	return WriterReport{Writer: writerID}, false
}

// WriterReport is what one writer's log holds.
type WriterReport struct {
	Writer string `json:"writer"`
	// Records counts the valid records.
	Records int `json:"records"`
	// FirstSeq and LastSeq are the lowest and highest sequence numbers of valid records.
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	// Gaps are the sequence numbers from 1 to LastSeq that have no valid record, so a log
	// that lost its beginning has a gap starting at 1.
	Gaps []Range `json:"gaps,omitempty"`
	// Missing counts the sequence numbers in Gaps.
	Missing uint64 `json:"missing"`
	// Duplicates counts valid records whose sequence number an earlier record already had.
	Duplicates int `json:"duplicates,omitempty"`
	// Corrupt lists the lines that are not valid records, torn last line excepted.
	Corrupt []Corruption `json:"corrupt,omitempty"`
	// Torn is set when the last line has no newline: its write was cut short.
	Torn bool `json:"torn,omitempty"`
	// LastWrite is the time of the record LastSeq.
	LastWrite time.Time `json:"lastWrite,omitzero"`
	// Index is the last sequence number of the writer's index (IndexPath), 0 when it has none;
	// IndexDamaged says why the index is not one, when it is not. CheckIndex judges them.
	Index        uint64 `json:"index,omitempty"`
	IndexDamaged string `json:"indexDamaged,omitempty"`
}

// Range is the sequence numbers First to Last, both included.
type Range struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// Len is how many sequence numbers the range holds.
func (r Range) Len() uint64 { return r.Last - r.First + 1 }

func (r Range) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d..%d", r.First, r.Last)
}

// Corruption is a line of a log that is not a valid record.
type Corruption struct {
	// Line is the line number, from 1.
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Verify reads every writer's log and index in the volume directory dir and checks the index
// invariant (Report.CheckIndex). A volume without records has an empty report; a missing
// volume directory is an error. A broken invariant is an error too, with the whole report
// returned beside it: its errors are *IndexError (errors.As), found by every caller that judges
// a volume by its records, while gaps and corrupt lines are findings in the report.
func Verify(dir string) (Report, error) {
	report, err := read(dir)
	if err == nil && report.CheckIndex() != nil {
		// A volume replaced by renames between the read of an index and of its log (a resync
		// that puts an older copy in place) reads as broken once; a torn copy stays broken.
		report, err = read(dir)
	}
	if err != nil {
		return report, err
	}
	if err := report.CheckIndex(); err != nil {
		return report, fmt.Errorf("the records of volume %s break their index invariant: %w", dir, err)
	}
	return report, nil
}

// read reads every writer's log and index in the volume directory dir.
func read(dir string) (Report, error) {
	if _, err := os.Stat(dir); err != nil {
		return Report{}, fmt.Errorf("failed to read volume %s: %w", dir, err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return Report{Writers: []WriterReport{}}, nil
	}
	if err != nil {
		return Report{}, fmt.Errorf("failed to list the records of %s: %w", dir, err)
	}
	report := Report{Writers: []WriterReport{}}
	// A writer has a log, an index, or both (an index alone names records a log lacks).
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), logSuffix)
		if !ok {
			id, ok = strings.CutSuffix(e.Name(), indexSuffix)
		}
		if ok && e.Type().IsRegular() && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		w, err := VerifyWriter(dir, id)
		if err != nil {
			return Report{}, err
		}
		report.Writers = append(report.Writers, w)
	}
	return report, nil
}

// VerifyWriter reads one writer's log and index in the volume directory dir; it reports the
// index and does not judge it (WriterReport.CheckIndex does). A writer without a log has an
// empty report.
func VerifyWriter(dir, writerID string) (WriterReport, error) {
	w := WriterReport{Writer: writerID}
	// The index first, the log after: a writer appends to the log first and the index after,
	// so reading them in the other order keeps the invariant while the writer runs.
	index, err := readIndex(dir, writerID)
	var damaged *damagedIndexError
	switch {
	case errors.As(err, &damaged):
		w.IndexDamaged = damaged.reason
	case err != nil:
		return w, err
	}
	w.Index = index
	raw, err := os.ReadFile(LogPath(dir, writerID))
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("failed to read the log of writer %s: %w", writerID, err)
	}
	lines := strings.Split(string(raw), "\n")
	// A complete log ends with a newline, leaving an empty last element; anything else is a
	// torn last line.
	if last := lines[len(lines)-1]; last != "" {
		w.Torn = true
	}
	lines = lines[:len(lines)-1]
	seen := map[uint64]bool{}
	for i, line := range lines {
		rec, err := parse(line, writerID)
		if err != nil {
			w.Corrupt = append(w.Corrupt, Corruption{Line: i + 1, Reason: err.Error()})
			continue
		}
		if seen[rec.seq] {
			w.Duplicates++
			continue
		}
		seen[rec.seq] = true
		w.Records++
		if w.FirstSeq == 0 || rec.seq < w.FirstSeq {
			w.FirstSeq = rec.seq
		}
		if rec.seq > w.LastSeq {
			w.LastSeq, w.LastWrite = rec.seq, rec.time
		}
	}
	w.Gaps = gaps(seen)
	for _, g := range w.Gaps {
		w.Missing += g.Len()
	}
	return w, nil
}

// gaps returns the sequence numbers from 1 to the highest in seen that seen lacks.
func gaps(seen map[uint64]bool) []Range {
	seqs := make([]uint64, 0, len(seen))
	for s := range seen {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	var out []Range
	next := uint64(1)
	for _, s := range seqs {
		if s > next {
			out = append(out, Range{First: next, Last: s - 1})
		}
		next = s + 1
	}
	return out
}

// present returns the sequence numbers the writer has valid records of, as ordered ranges.
func (w WriterReport) present() []Range {
	if w.Records == 0 {
		return nil
	}
	return subtract([]Range{{First: 1, Last: w.LastSeq}}, w.Gaps)
}
