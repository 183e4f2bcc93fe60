package objectstore

import (
	"context"
	"errors"
)

// Store is one S3 profile: a flat space of keys holding byte strings. Every method is
// idempotent, so a caller that failed halfway simply calls again. Errors are *Error values
// (errors.As) that also match their kind's sentinel (errors.Is), such as ErrNotFound or
// ErrUnreachable.
type Store interface {
	// Name is the profile's name, for conditions and messages.
	Name() string
	// Put writes body under key, replacing what was there.
	Put(ctx context.Context, key string, body []byte) error
	// Get reads the object at key; an absent object is ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every key that starts with prefix ("" lists the whole bucket), in
	// lexicographic order, reading all pages.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object at key; an absent object is no error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix. An empty prefix is refused
	// (it would empty a bucket that other users may share).
	DeletePrefix(ctx context.Context, prefix string) error
}

// Operations, as *Error.Op names them.
const (
	OpPut          = "put"
	OpGet          = "get"
	OpList         = "list"
	OpDelete       = "delete"
	OpDeletePrefix = "delete-prefix"
)

// errEmptyKey and errEmptyPrefix are programming errors of the caller.
var (
	errEmptyKey    = errors.New("the key is empty")
	errEmptyPrefix = errors.New("the prefix is empty: refusing to delete every object in the bucket")
)

// checkKey returns the error for an operation on an invalid key or prefix. List takes any
// prefix.
func checkKey(op, key string) error {
	if key != "" || op == OpList {
		return nil
	}
	if op == OpDeletePrefix {
		return errEmptyPrefix
	}
	return errEmptyKey
}
