// Package records is the lab's workload records: an append-only log per writer in a volume,
// one checksummed, sequence-numbered record a line, and the verifier that reads a volume's logs
// back and compares two copies of a volume. Scenarios prove with it that no record was lost, or
// that only the records written after the last completed sync were.
//
// A volume holds one log per writer, <volume>/records/<writer>.log. A record is one line of five
// fields separated by single spaces:
//
//	<seq> <writer> <time> <payload> <checksum>
//
// seq counts 1, 2, 3, ... per writer; time is RFC 3339 with nanoseconds in UTC; payload is
// filler of the writer's chosen size; checksum is the CRC-32C (Castagnoli) of everything before
// the last space, as eight hex digits. A record whose checksum does not match, or a line that
// does not parse, is corrupt. A last line without its newline is torn: the write was cut short.
//
// Every record of one writer is written by one process, so two copies of a volume that both
// hold a writer's record n hold the same record; comparing copies compares sequence numbers.
//
// Dependent records, which a copy of a volume taken at one instant (a crash-consistent point,
// what a power loss leaves) always keeps and a copy of its files taken at different instants (a
// torn copy) can break, as a database's log and control file:
//
//   - Within a volume, beside each log, an index <volume>/records/<writer>.log.index, one
//     sequence number a line, appended after the record it names (Commit). Its last whole line
//     is the index; invariant: index ≤ the log's last valid record. The name sorts after the
//     log's, so a copy in file-name order (a directory walk, rsync) copies the log first and
//     the index later: the order in which a torn copy breaks the invariant. Verify checks it.
//   - Across the volumes A, B, ... of one writer (a pod with several volumes, in the order it
//     names them), record n is committed to A, then to B, and A takes n+1 only once B holds n.
//     Invariant on copies of A and B taken at one instant: B ≤ A ≤ B + 1 (CheckTwins). Copies
//     taken volume by volume, each at its own instant, as per-volume mirroring takes them, may
//     break it with no fault anywhere: holding it across volumes is a consistency group's
//     promise. So Verify does not check it; CheckTwins is for copies of one instant (a
//     consistency group's, or volumes whose writer had stopped before they were copied).
//
// The package is pure logic over files: no Kubernetes.
package records

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Dir is the directory of the record logs inside a volume.
const Dir = "records"

const logSuffix = ".log"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// payloadAlphabet fills payloads; a record's payload depends only on its sequence number.
const payloadAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// LogPath is the path of a writer's log in the volume directory dir.
func LogPath(dir, writerID string) string {
	return filepath.Join(dir, Dir, writerID+logSuffix)
}

// ValidateWriterID checks that id can name a log file and be a field of a record: letters,
// digits, '.', '-' and '_', as in Kubernetes names and UIDs.
func ValidateWriterID(id string) error {
	if id == "" || id == "." || id == ".." {
		return fmt.Errorf("writer id %q is not valid", id)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("writer id %q has %q: use letters, digits, '.', '-' and '_'", id, r)
		}
	}
	return nil
}

// Format returns the record line (with its newline) of writer's record seq.
func Format(writerID string, seq uint64, payloadSize int, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString(strconv.FormatUint(seq, 10))
	b.WriteByte(' ')
	b.WriteString(writerID)
	b.WriteByte(' ')
	b.WriteString(now.UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	for i := range payloadSize {
		b.WriteByte(payloadAlphabet[(seq+uint64(i))%uint64(len(payloadAlphabet))])
	}
	sum := crc32.Checksum(b.Bytes(), castagnoli)
	fmt.Fprintf(&b, " %08x\n", sum)
	return b.Bytes()
}

// Append appends writer's record seq, with a payload of payloadSize bytes stamped now, to its
// log in the volume directory dir, which must exist. It does not sync and leaves the index as
// it is: Commit is a writer's whole write. When the log ends in a torn line, Append first ends
// that line, so the new record stays whole (the torn line is then reported as corrupt, no
// longer as torn).
func Append(dir, writerID string, seq uint64, payloadSize int, now time.Time) error {
	return appendRecord(dir, writerID, seq, payloadSize, now, false)
}

// Commit is one write of a writer, as a database commits: it appends record seq to the log,
// then appends seq to the index (IndexPath), so that the index never names a record the log
// lacks. With sync, the log is fsynced before the index is written and the index after it
// (and each directory an entry was created in), so a record Commit returned for survives a
// power loss: the records a writer acknowledges are the records it synced.
func Commit(dir, writerID string, seq uint64, payloadSize int, now time.Time, sync bool) error {
	if err := appendRecord(dir, writerID, seq, payloadSize, now, sync); err != nil {
		return err
	}
	path := IndexPath(dir, writerID)
	if err := appendLine(path, []byte(strconv.FormatUint(seq, 10)+"\n"), sync); err != nil {
		return fmt.Errorf("failed to index record %d in %s: %w", seq, path, err)
	}
	return nil
}

func appendRecord(dir, writerID string, seq uint64, payloadSize int, now time.Time, sync bool) error {
	if err := ValidateWriterID(writerID); err != nil {
		return err
	}
	if seq == 0 || payloadSize < 0 {
		return fmt.Errorf("record %d of %s with payload size %d: sequence numbers start at 1 and sizes are not negative", seq, writerID, payloadSize)
	}
	recordsDir := filepath.Join(dir, Dir)
	err := os.Mkdir(recordsDir, 0o750)
	switch {
	case err == nil && sync:
		if err := syncDir(dir); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("failed to create the records directory in %s: %w", dir, err)
	}
	path := LogPath(dir, writerID)
	if err := appendLine(path, Format(writerID, seq, payloadSize, now), sync); err != nil {
		return fmt.Errorf("failed to append record %d to %s: %w", seq, path, err)
	}
	return nil
}

// appendLine appends line to the file at path, created when missing, after ending a torn last
// line. With sync it fsyncs the file, and its directory when it created the file.
func appendLine(path string, line []byte, sync bool) error {
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	torn, err := endsTorn(f)
	if err == nil {
		if torn {
			line = append([]byte{'\n'}, line...)
		}
		_, err = f.Write(line)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && sync && created {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

// syncDir fsyncs a directory, so that the entries created in it survive a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("failed to sync directory %s: %w", dir, err)
	}
	return nil
}

// endsTorn reports whether f is not empty and does not end with a newline.
func endsTorn(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}

// record is one parsed line.
type record struct {
	seq  uint64
	time time.Time
}

// parse parses one line (without its newline) of writerID's log.
func parse(line, writerID string) (record, error) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return record{}, errors.New("not a record")
	}
	body, sum := line[:i], line[i+1:]
	want, err := strconv.ParseUint(sum, 16, 32)
	if err != nil || len(sum) != 8 {
		return record{}, fmt.Errorf("checksum %q is not 8 hex digits", sum)
	}
	if got := crc32.Checksum([]byte(body), castagnoli); got != uint32(want) {
		return record{}, fmt.Errorf("checksum mismatch: the record says %08x, its content has %08x", want, got)
	}
	fields := strings.Split(body, " ")
	if len(fields) != 4 {
		return record{}, fmt.Errorf("%d fields before the checksum, want 4", len(fields))
	}
	seq, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil || seq == 0 {
		return record{}, fmt.Errorf("sequence number %q is not a positive integer", fields[0])
	}
	if fields[1] != writerID {
		return record{}, fmt.Errorf("record of writer %q in the log of %q", fields[1], writerID)
	}
	t, err := time.Parse(time.RFC3339Nano, fields[2])
	if err != nil {
		return record{}, fmt.Errorf("timestamp %q: %w", fields[2], err)
	}
	return record{seq: seq, time: t}, nil
}
