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
	// GetVersion reads the object at key with its version (the ETag the store gave it), for a
	// later PutIf; an absent object is ErrNotFound.
	GetVersion(ctx context.Context, key string) (body []byte, version string, err error)
	// PutIf writes body under key only if the object there is still at version, or, with an
	// empty version, only if there is no object there (S3 If-Match / If-None-Match: *). The
	// store checks and writes as one step: of several concurrent PutIf calls with the same
	// version, one succeeds and the others fail with ErrPreconditionFailed.
	PutIf(ctx context.Context, key string, body []byte, version string) error
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
	OpPutIf        = "conditional put"
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
