package labtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
)

// SyncBuffer is a buffer a command writes while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TarFile is one regular file of an archive.
type TarFile struct {
	Name string
	Mode os.FileMode
	Body []byte
}

// Untar reads a tar.gz file whole, in its order; any error fails the test.
func Untar(t testing.TB, file string) []TarFile {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", file, err)
	}
	tr := tar.NewReader(gz)
	var out []TarFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("failed to read %s: %v", file, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("failed to read %s in %s: %v", h.Name, file, err)
		}
		out = append(out, TarFile{Name: h.Name, Mode: h.FileInfo().Mode(), Body: body})
	}
}
