package objectstore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Every object drover writes to a store is sealed in an envelope: AES-256-GCM under the
// profile's current store key (keyring.go), which both encrypts the object and authenticates
// it. The stores are untrusted: whoever can read a bucket learns from an envelope only its size
// and key ID, and whoever can write to it cannot make an envelope that opens, nor move a valid
// envelope to another key (the object's key is authenticated with it), nor to another store
// (each profile has its own keys).
//
// An envelope is:
//
//	magic "DRV\x1e" | version 1 | key ID length (1..32) | key ID | nonce (12 bytes) | ciphertext and GCM tag
//
// and the additional authenticated data is the header (everything before the ciphertext)
// followed by the object's key in the bucket, so neither the key ID nor the version can be
// changed either. The nonce is random: 2^32 objects under one key keep the chance of a repeated
// nonce below 2^-32, far more than a store key seals before it is rotated.
const (
	envelopeVersion = 1
	nonceSize       = 12
	tagSize         = 16
)

var envelopeMagic = []byte("DRV\x1e")

// EnvelopeOverhead is the most bytes sealing adds to an object.
const EnvelopeOverhead = 4 + 1 + 1 + maxKeyIDLen + nonceSize + tagSize

// ErrNotSealed is the cause of the refusal of an object with no envelope: a store written by a
// drover that did not seal its objects, or by someone else.
var ErrNotSealed = errors.New("the object is not sealed")

// Seal returns body sealed under the keyring's current key for the object key.
func Seal(k Keyring, key string, body []byte) ([]byte, error) {
	secret, ok := k.key(k.Current)
	if !ok {
		return nil, fmt.Errorf("%s holds no current key to seal %q with", k.Source, key)
	}
	aead, err := newAEAD(secret)
	if err != nil {
		return nil, err
	}
	header := make([]byte, 0, 6+len(k.Current)+nonceSize)
	header = append(header, envelopeMagic...)
	idLen := len(k.Current)
	if idLen > maxKeyIDLen {
		return nil, fmt.Errorf("%s: the current key ID %q is longer than %d characters", k.Source, k.Current, maxKeyIDLen)
	}
	header = append(header, envelopeVersion, byte(idLen))
	header = append(header, k.Current...)
	nonce := make([]byte, nonceSize)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (it panics on a broken kernel source)
	header = append(header, nonce...)
	out := make([]byte, len(header), len(header)+len(body)+tagSize)
	copy(out, header)
	return aead.Seal(out, nonce, body, additionalData(header, key)), nil
}

// Open returns the body sealed in envelope for the object key, and the ID of the key that
// sealed it. An object that is not an envelope fails with ErrNotSealed; one that does not open
// (altered, moved from another key, sealed with another store's key) fails with an error that
// names the key ID. The errors are for Refused: they never repeat the object's content.
func Open(k Keyring, key string, envelope []byte) (body []byte, keyID string, err error) {
	keyID, headerLen, err := parseHeader(envelope)
	if err != nil {
		return nil, keyID, err
	}
	secret, ok := k.key(keyID)
	if !ok {
		return nil, keyID, fmt.Errorf("it is sealed with store key ID %s, which %s does not hold (it holds %v): the key was retired before "+
			"every object sealed with it was rewritten, or this copy of the Secret lacks it; add it back from a copy that holds it (docs/security.md, \"Rotating a key\")",
			keyID, k.Source, k.IDs())
	}
	header, nonce := envelope[:headerLen], envelope[headerLen-nonceSize:headerLen]
	aead, err := newAEAD(secret)
	if err != nil {
		return nil, keyID, err
	}
	body, err = aead.Open(nil, nonce, envelope[headerLen:], additionalData(header, key))
	if err != nil {
		return nil, keyID, fmt.Errorf("it does not authenticate under store key ID %s of %s: it was altered, or written under another object key or by someone without the key", keyID, k.Source)
	}
	return body, keyID, nil
}

// EnvelopeKeyID returns the ID of the key an envelope names in its header, without opening it:
// what a reader without the keys (or with them, before deciding to open) learns of an object.
// An object that is not an envelope fails with ErrNotSealed.
func EnvelopeKeyID(envelope []byte) (string, error) {
	keyID, _, err := parseHeader(envelope)
	return keyID, err
}

// parseHeader reads an envelope's header: the key ID it names and the header's length.
func parseHeader(envelope []byte) (keyID string, headerLen int, err error) {
	if !bytes.HasPrefix(envelope, envelopeMagic) {
		return "", 0, ErrNotSealed
	}
	rest := envelope[len(envelopeMagic):]
	if len(rest) < 2 {
		return "", 0, errors.New("its envelope is truncated")
	}
	if rest[0] != envelopeVersion {
		return "", 0, fmt.Errorf("its envelope has version %d, which this drover does not read (it reads version %d)", rest[0], envelopeVersion)
	}
	idLen := int(rest[1])
	if idLen == 0 || idLen > maxKeyIDLen || len(rest) < 2+idLen+nonceSize+tagSize {
		return "", 0, errors.New("its envelope is truncated or has an invalid key ID length")
	}
	keyID = string(rest[2 : 2+idLen])
	if err := validKeyID(keyID); err != nil {
		return "", 0, fmt.Errorf("its envelope names no valid key: %w", err)
	}
	return keyID, len(envelopeMagic) + 2 + idLen + nonceSize, nil
}

func newAEAD(secret []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("failed to use a store key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("failed to use a store key: %w", err)
	}
	return aead, nil
}

func additionalData(header []byte, key string) []byte {
	ad := make([]byte, 0, len(header)+len(key))
	return append(append(ad, header...), key...)
}

// Sealed returns store with every object sealed on the way in and opened on the way out under
// keys: Put and PutIf write envelopes, Get and GetVersion return what the envelope holds, or a
// KindRefused error naming the store, the object and the key ID when it does not open. Versions
// are those of the envelopes, so conditional writes keep their meaning. SealMetrics.Sealed is
// the same store with its cost counted.
func Sealed(store Store, keys Keyring) Store {
	return (*SealMetrics)(nil).Sealed(store, keys)
}

type sealedStore struct {
	Store
	keys Keyring
	// counters count the sealing and opening; nil counts nothing (SealMetrics.Sealed).
	counters *sealCounters
}

var _ Store = (*sealedStore)(nil)

// seal seals body for key, counted.
func (s *sealedStore) seal(key string, body []byte) ([]byte, error) {
	if s.counters == nil {
		return Seal(s.keys, key, body)
	}
	began := s.counters.now()
	sealed, err := Seal(s.keys, key, body)
	s.counters.seal.add(s.counters.now().Sub(began), len(body))
	return sealed, err
}

// openEnvelope opens the envelope read for key, counted.
func (s *sealedStore) openEnvelope(key string, envelope []byte) ([]byte, string, error) {
	if s.counters == nil {
		return Open(s.keys, key, envelope)
	}
	began := s.counters.now()
	body, keyID, err := Open(s.keys, key, envelope)
	s.counters.open.add(s.counters.now().Sub(began), len(envelope))
	return body, keyID, err
}

func (s *sealedStore) Put(ctx context.Context, key string, body []byte) error {
	sealed, err := s.seal(key, body)
	if err != nil {
		return &Error{Kind: KindOther, Profile: s.Name(), Op: OpPut, Key: key, Err: err}
	}
	return s.Store.Put(ctx, key, sealed)
}

func (s *sealedStore) PutIf(ctx context.Context, key string, body []byte, version string) error {
	sealed, err := s.seal(key, body)
	if err != nil {
		return &Error{Kind: KindOther, Profile: s.Name(), Op: OpPutIf, Key: key, Err: err}
	}
	return s.Store.PutIf(ctx, key, sealed, version)
}

func (s *sealedStore) Get(ctx context.Context, key string) ([]byte, error) {
	raw, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.open(key, raw)
}

func (s *sealedStore) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	raw, version, err := s.Store.GetVersion(ctx, key)
	if err != nil {
		return nil, "", err
	}
	body, err := s.open(key, raw)
	if err != nil {
		return nil, "", err
	}
	return body, version, nil
}

// GetCurrent is Get, and whether the object is sealed under the current key.
func (s *sealedStore) GetCurrent(ctx context.Context, key string) ([]byte, bool, error) {
	raw, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, false, err
	}
	body, keyID, err := s.openKey(key, raw)
	return body, err == nil && keyID == s.keys.Current, err
}

// GetVersionCurrent is GetVersion, and whether the object is sealed under the current key.
func (s *sealedStore) GetVersionCurrent(ctx context.Context, key string) ([]byte, string, bool, error) {
	raw, version, err := s.Store.GetVersion(ctx, key)
	if err != nil {
		return nil, "", false, err
	}
	body, keyID, err := s.openKey(key, raw)
	if err != nil {
		return nil, "", false, err
	}
	return body, version, keyID == s.keys.Current, nil
}

// CurrentKeyReader is a store that tells whether an object is sealed under its current store
// key: a Sealed store, and the wrappers of one, which pass the calls on.
type CurrentKeyReader interface {
	// GetCurrent is Get, and whether the object is sealed under the current key.
	GetCurrent(ctx context.Context, key string) (body []byte, current bool, err error)
	// GetVersionCurrent is GetVersion, and whether the object is sealed under the current key.
	GetVersionCurrent(ctx context.Context, key string) (body []byte, version string, current bool, err error)
}

var _ CurrentKeyReader = (*sealedStore)(nil)

// GetCurrent reads key as Get does, and reports whether the object is sealed under the store's
// current key. It is false for an object sealed under an older key of the keyring, which still
// opens: a writer that compares what a store holds before writing rewrites such an object as if
// it differed, so that after a rotation every object it keeps is sealed anew under the current
// key and the older key can be retired (docs/security.md, "Rotating a key"). A store that does
// not seal (a test's fake) reports every object current.
func GetCurrent(ctx context.Context, s Store, key string) ([]byte, bool, error) {
	if r, ok := s.(CurrentKeyReader); ok {
		return r.GetCurrent(ctx, key)
	}
	body, err := s.Get(ctx, key)
	return body, err == nil, err
}

// GetVersionCurrent is GetCurrent with the object's version, as GetVersion reads it.
func GetVersionCurrent(ctx context.Context, s Store, key string) ([]byte, string, bool, error) {
	if r, ok := s.(CurrentKeyReader); ok {
		return r.GetVersionCurrent(ctx, key)
	}
	body, version, err := s.GetVersion(ctx, key)
	return body, version, err == nil, err
}

func (s *sealedStore) open(key string, raw []byte) ([]byte, error) {
	body, _, err := s.openKey(key, raw)
	return body, err
}

// openKey is open, with the ID of the key that sealed the object.
func (s *sealedStore) openKey(key string, raw []byte) ([]byte, string, error) {
	body, keyID, err := s.openEnvelope(key, raw)
	if errors.Is(err, ErrNotSealed) {
		return nil, keyID, Refused(s.Name(), key, fmt.Errorf("%w: it has no drover envelope, so it was written without the store key "+
			"(by a drover that did not seal its objects, or by someone else); to migrate a group written so, delete its primary marker "+
			"%s from this store, and the group's primary rewrites its objects there sealed, from its live state (docs/security.md, \"The S3 stores\")",
			ErrNotSealed, markerOf(key)))
	}
	if err != nil {
		return nil, keyID, Refused(s.Name(), key, err)
	}
	return body, keyID, nil
}

// markerOf is the primary marker beside key: <namespace>/<name>/primary.json.
func markerOf(key string) string {
	parts := bytes.SplitN([]byte(key), []byte("/"), 3)
	if len(parts) < 3 {
		return "<namespace>/<name>/primary.json"
	}
	return string(parts[0]) + "/" + string(parts[1]) + "/primary.json"
}
