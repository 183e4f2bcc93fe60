package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// indexSuffix names a log's index: <writer>.log.index sorts right after <writer>.log.
const indexSuffix = logSuffix + ".index"

// indexTail is how much of the end of an index file readIndex reads: more than two lines.
const indexTail = 64

// IndexPath is the path of a writer's index in the volume directory dir.
func IndexPath(dir, writerID string) string {
	return filepath.Join(dir, Dir, writerID+indexSuffix)
}

// readIndex returns the last whole line of writer's index in dir: 0 when it has none. A last
// line without its newline is a write cut short and ignored, as the log's torn line is.
func readIndex(dir, writerID string) (uint64, error) {
	f, err := os.Open(IndexPath(dir, writerID))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to open the index of writer %s: %w", writerID, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("failed to read the index of writer %s: %w", writerID, err)
	}
	from := max(0, st.Size()-indexTail)
	buf := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("failed to read the index of writer %s: %w", writerID, err)
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if from == 0 {
			return 0, nil // only a first line cut short
		}
		return 0, errDamagedIndex(writerID, fmt.Sprintf("its last %d bytes hold no line end", indexTail))
	}
	start := bytes.LastIndexByte(buf[:end], '\n') + 1
	if start == 0 && from > 0 {
		return 0, errDamagedIndex(writerID, "its last line is longer than a sequence number")
	}
	last := string(buf[start:end])
	seq, err := strconv.ParseUint(last, 10, 64)
	if err != nil || seq == 0 {
		return 0, errDamagedIndex(writerID, fmt.Sprintf("its last line %q is not a sequence number", last))
	}
	return seq, nil
}

// damagedIndexError is an index whose content is not an index.
type damagedIndexError struct{ writer, reason string }

func (e *damagedIndexError) Error() string {
	return fmt.Sprintf("the index of writer %s is damaged: %s", e.writer, e.reason)
}

func errDamagedIndex(writerID, reason string) error {
	return &damagedIndexError{writer: writerID, reason: reason}
}

// IndexError is a writer's index that names a record its log does not hold, or that is not an
// index: the volume (or its copy) is not the state of one instant, as a copy of its files
// taken at different instants (a torn copy) can be.
type IndexError struct {
	Writer string
	// Index is the index's last sequence number, LastSeq the log's last valid record.
	Index, LastSeq uint64
	// Damaged says why the index could not be read as one; empty when it could.
	Damaged string
}

func (e *IndexError) Error() string {
	if e.Damaged != "" {
		return fmt.Sprintf("writer %s: %s", e.Writer, e.Damaged)
	}
	return fmt.Sprintf("writer %s: the index names record %d, its log ends at record %d: the volume is not the state of one instant (a torn copy: its log copied before its index), or its log lost records",
		e.Writer, e.Index, e.LastSeq)
}

// CheckIndex checks the index invariant of one writer: index ≤ the log's last valid record.
func (w WriterReport) CheckIndex() error {
	switch {
	case w.IndexDamaged != "":
		return &IndexError{Writer: w.Writer, Index: w.Index, LastSeq: w.LastSeq, Damaged: w.IndexDamaged}
	case w.Index > w.LastSeq:
		return &IndexError{Writer: w.Writer, Index: w.Index, LastSeq: w.LastSeq}
	}
	return nil
}

// CheckIndex checks the index invariant of every writer of the volume; the errors are
// *IndexError.
func (r Report) CheckIndex() error {
	var errs []error
	for _, w := range r.Writers {
		errs = append(errs, w.CheckIndex())
	}
	return errors.Join(errs...)
}

// CheckIndex reads the records of the volume directory dir and checks the index invariant of
// every writer (Report.CheckIndex). Verify does the same and returns the report with it.
func CheckIndex(dir string) error {
	_, err := Verify(dir)
	return err
}

// TwinError is a pair of volumes of one writer whose records break B ≤ A ≤ B + 1.
type TwinError struct {
	Writer       string
	LastA, LastB uint64
}

func (e *TwinError) Error() string {
	return fmt.Sprintf("writer %s: its first volume ends at record %d, its second at record %d, want the second at most one record behind and never ahead",
		e.Writer, e.LastA, e.LastB)
}

// CheckTwins checks one writer's records in two of its volumes, a the volume it writes first
// and b the next: B ≤ A ≤ B + 1 on the last valid records. It holds on copies of a and b taken
// at one instant (a consistency group's, or copies of volumes whose writer had stopped), and
// may break on copies taken at different instants without any fault: call it only where the
// copies are of one instant. a and b are the same writer's reports (Report.Writer).
func CheckTwins(a, b WriterReport) error {
	if b.LastSeq > a.LastSeq || a.LastSeq > b.LastSeq+1 {
		writer := a.Writer
		if writer == "" {
			writer = b.Writer
		}
		return &TwinError{Writer: writer, LastA: a.LastSeq, LastB: b.LastSeq}
	}
	return nil
}
