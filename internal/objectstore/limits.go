package objectstore

import (
	"fmt"
	"io"
)

// Reads are bounded: whoever can write to a bucket, or answer as its server, chooses what a Get
// returns, and an object read whole into memory could exhaust the agent's (docs/security.md,
// "The S3 stores"). An object larger than its limit is refused from its Content-Length before
// its body is read, and the body is read through an io.LimitReader, so a server that sends more
// than it announced, or announces nothing, still costs at most the limit.
const (
	// DefaultMaxObjectBytes is the largest object a Get accepts when Limits say nothing.
	DefaultMaxObjectBytes int64 = 64 << 20
	// DefaultMaxKeys is the most keys a List returns when Limits say nothing.
	DefaultMaxKeys = 10000
)

// Limits bound what a store's reads accept. The zero value is DefaultMaxObjectBytes for every
// key and DefaultMaxKeys per List.
type Limits struct {
	// MaxObjectBytes returns the largest object accepted at key; nil or 0 means
	// DefaultMaxObjectBytes. The caller knows its layout: a capture may be large, a PV's
	// metadata is small.
	MaxObjectBytes func(key string) int64
	// MaxKeys is the most keys one List may return; more is refused. 0 means DefaultMaxKeys.
	MaxKeys int
}

func (l Limits) maxObjectBytes(key string) int64 {
	if l.MaxObjectBytes != nil {
		if n := l.MaxObjectBytes(key); n > 0 {
			return n
		}
	}
	return DefaultMaxObjectBytes
}

func (l Limits) maxKeys() int {
	if l.MaxKeys > 0 {
		return l.MaxKeys
	}
	return DefaultMaxKeys
}

// readBounded reads body, announced as length bytes (negative when unknown), refusing it when
// either exceeds limit. It never holds more than limit+1 bytes.
func readBounded(body io.Reader, length, limit int64) ([]byte, error) {
	if length > limit {
		return nil, &tooLargeError{fmt.Sprintf("the object is %d bytes, more than the limit of %d: refused before reading it", length, limit)}
	}
	buf, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) > limit {
		return nil, &tooLargeError{fmt.Sprintf("the object is more than the limit of %d bytes (its server announced %s): refused", limit, announced(length))}
	}
	return buf, nil
}

func announced(length int64) string {
	if length < 0 {
		return "no length"
	}
	return fmt.Sprintf("%d bytes", length)
}

// tooLargeError is an object refused for its size.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }
