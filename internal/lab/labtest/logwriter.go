package labtest

import (
	"bytes"
	"io"
	"sync"
	"testing"
)

// LogWriter returns a writer that sends what a story, a benchmark or a soak prints to t's log,
// a whole line at a time; it is safe for concurrent writers.
func LogWriter(t testing.TB) io.Writer { return &logWriter{t: t} }

type logWriter struct {
	t   testing.TB
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}
