package objectstore

import (
	"context"
	"crypto/md5" //nolint:gosec // an ETag, as S3 computes it for a single PUT, not a security measure
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Fake is an in-memory Store for unit tests, safe for concurrent use. It copies bodies in and
// out, so a caller cannot change what it stored by changing its slice.
type Fake struct {
	name string

	mu      sync.Mutex
	objects map[string][]byte
	err     error
}

var _ Store = (*Fake)(nil)

// NewFake returns an empty fake store named name.
func NewFake(name string) *Fake {
	return &Fake{name: name, objects: map[string][]byte{}}
}

// SetError makes every later call fail with err, wrapped as an *Error of the fake's profile
// unless it is one already: SetError(ErrUnreachable) simulates a store that is down,
// SetError(ErrUnauthorized) one that refuses the credentials. SetError(nil) heals the store;
// its objects are kept throughout, as a store that comes back keeps them.
func (f *Fake) SetError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Name returns the fake's profile name.
func (f *Fake) Name() string { return f.name }

// Put stores a copy of body under key.
func (f *Fake) Put(ctx context.Context, key string, body []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpPut, key); err != nil {
		return err
	}
	f.objects[key] = append([]byte{}, body...)
	return nil
}

// Get returns a copy of the object at key.
func (f *Fake) Get(ctx context.Context, key string) ([]byte, error) {
	body, _, err := f.GetVersion(ctx, key)
	return body, err
}

// GetVersion returns a copy of the object at key and its ETag (the quoted MD5 of its bytes, as
// S3 gives for a single PUT).
func (f *Fake) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpGet, key); err != nil {
		return nil, "", err
	}
	body, ok := f.objects[key]
	if !ok {
		return nil, "", &Error{Kind: KindNotFound, Profile: f.name, Op: OpGet, Key: key, Err: ErrNotFound}
	}
	return slices.Clone(body), etag(body), nil
}

// PutIf stores a copy of body under key if the object there is at version (absent, for "").
func (f *Fake) PutIf(ctx context.Context, key string, body []byte, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpPutIf, key); err != nil {
		return err
	}
	current, ok := f.objects[key]
	if (version == "" && ok) || (version != "" && (!ok || etag(current) != version)) {
		return &Error{Kind: KindPreconditionFailed, Profile: f.name, Op: OpPutIf, Key: key, Err: ErrPreconditionFailed}
	}
	f.objects[key] = append([]byte{}, body...)
	return nil
}

func etag(body []byte) string {
	sum := md5.Sum(body) //nolint:gosec // see the import
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// List returns the keys starting with prefix, sorted.
func (f *Fake) List(ctx context.Context, prefix string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpList, prefix); err != nil {
		return nil, err
	}
	keys := []string{}
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes the object at key, if any.
func (f *Fake) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpDelete, key); err != nil {
		return err
	}
	delete(f.objects, key)
	return nil
}

// DeletePrefix removes every object whose key starts with prefix.
func (f *Fake) DeletePrefix(ctx context.Context, prefix string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, OpDeletePrefix, prefix); err != nil {
		return err
	}
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			delete(f.objects, k)
		}
	}
	return nil
}

// check returns the error a call must fail with, if any: an invalid key, a done context, or
// the injected error. f.mu is held.
func (f *Fake) check(ctx context.Context, op, key string) error {
	if err := checkKey(op, key); err != nil {
		return &Error{Kind: KindOther, Profile: f.name, Op: op, Key: key, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Kind: classify(err, ""), Profile: f.name, Op: op, Key: key, Err: err}
	}
	if f.err == nil {
		return nil
	}
	var e *Error
	if errors.As(f.err, &e) {
		return f.err
	}
	return &Error{Kind: KindOf(f.err), Profile: f.name, Op: op, Key: key, Err: f.err}
}
