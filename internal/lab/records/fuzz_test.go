package records

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// FuzzVerifyWriter feeds VerifyWriter a log as a volume may hold it after a failover: whole
// records around arbitrary bytes (a torn or overwritten block) and a last record cut anywhere.
// It must never panic, must find the whole records a and b whatever surrounds them, and its
// counts must agree: records plus missing is the highest sequence number, and every complete
// line is a record, a duplicate or a corruption.
func FuzzVerifyWriter(f *testing.F) {
	f.Add(uint64(1), []byte("2 w-1 2026-05-01T12:00:00Z abc 00000000"), uint64(3), uint64(4), uint16(10))
	f.Add(uint64(5), []byte(""), uint64(5), uint64(1), uint16(0))
	f.Add(uint64(1<<63), []byte("\n\n\x00\xff"), uint64(2), uint64(7), uint16(200))
	f.Fuzz(func(t *testing.T, a uint64, junk []byte, b, c uint64, cut uint16) {
		const writer = "w-1"
		a, b, c = a%1_000_000_000_000+1, b%1_000_000_000_000+1, c%1_000_000_000_000+1
		last := Format(writer, c, 8, t0)
		last = last[:int(cut)%(len(last)+1)]
		var log bytes.Buffer
		log.Write(Format(writer, a, 8, t0))
		log.Write(junk)
		log.WriteByte('\n')
		log.Write(Format(writer, b, 8, t0.Add(time.Second)))
		log.Write(last)
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, Dir), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(LogPath(dir, writer), log.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := VerifyWriter(dir, writer)
		if err != nil {
			t.Fatalf("VerifyWriter: %v", err)
		}
		present := w.present()
		for _, seq := range []uint64{a, b} {
			if !slices.ContainsFunc(present, func(r Range) bool { return r.First <= seq && seq <= r.Last }) {
				t.Fatalf("whole record %d not found: %+v", seq, w)
			}
		}
		if uint64(w.Records)+w.Missing != w.LastSeq {
			t.Fatalf("%d records and %d missing, but the highest sequence number is %d", w.Records, w.Missing, w.LastSeq)
		}
		lines := uint64(bytes.Count(log.Bytes(), []byte{'\n'}))
		if got := uint64(w.Records + w.Duplicates + len(w.Corrupt)); got != lines {
			t.Fatalf("%d complete lines, but %d records, %d duplicates and %d corrupt", lines, w.Records, w.Duplicates, len(w.Corrupt))
		}
		if torn := !bytes.HasSuffix(log.Bytes(), []byte{'\n'}); w.Torn != torn {
			t.Fatalf("torn = %v for a log that ends %q", w.Torn, log.Bytes()[log.Len()-1:])
		}
	})
}

// FuzzParse feeds parse any line: it must never panic, and a line it accepts has a positive
// sequence number and the writer's id, and formats back to a line parse accepts the same way.
func FuzzParse(f *testing.F) {
	f.Add(string(bytes.TrimSuffix(Format("w-1", 42, 4, t0), []byte{'\n'})))
	f.Add("1 w-1 notatime abc 00000000")
	f.Add(" ")
	f.Fuzz(func(t *testing.T, line string) {
		rec, err := parse(line, "w-1")
		if err != nil {
			return
		}
		if rec.seq == 0 {
			t.Fatalf("accepted sequence number 0 in %q", line)
		}
		again, err := parse(string(bytes.TrimSuffix(Format("w-1", rec.seq, 4, rec.time), []byte{'\n'})), "w-1")
		if err != nil || again.seq != rec.seq || !again.time.Equal(rec.time) {
			t.Fatalf("record %d of %q does not format back: %+v, %v", rec.seq, line, again, err)
		}
	})
}
