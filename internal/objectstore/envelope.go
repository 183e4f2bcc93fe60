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
	header = append(header, envelopeVersion, byte(len(k.Current)))
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
	if !bytes.HasPrefix(envelope, envelopeMagic) {
		return nil, "", ErrNotSealed
	}
	rest := envelope[len(envelopeMagic):]
	if len(rest) < 2 {
		return nil, "", errors.New("its envelope is truncated")
	}
	if rest[0] != envelopeVersion {
		return nil, "", fmt.Errorf("its envelope has version %d, which this drover does not read (it reads version %d)", rest[0], envelopeVersion)
	}
	idLen := int(rest[1])
	if idLen == 0 || idLen > maxKeyIDLen || len(rest) < 2+idLen+nonceSize+tagSize {
		return nil, "", errors.New("its envelope is truncated or has an invalid key ID length")
	}
	keyID = string(rest[2 : 2+idLen])
	if err := validKeyID(keyID); err != nil {
		return nil, "", fmt.Errorf("its envelope names no valid key: %w", err)
	}
	secret, ok := k.key(keyID)
	if !ok {
		return nil, keyID, fmt.Errorf("it is sealed with store key ID %s, which %s does not hold (it holds %v): add that key to the Secret on this cluster, as the peer's copy holds it",
			keyID, k.Source, k.IDs())
	}
	headerLen := len(envelopeMagic) + 2 + idLen + nonceSize
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
// are those of the envelopes, so conditional writes keep their meaning.
func Sealed(store Store, keys Keyring) Store {
	return &sealedStore{Store: store, keys: keys}
}

type sealedStore struct {
	Store
	keys Keyring
}

var _ Store = (*sealedStore)(nil)

func (s *sealedStore) Put(ctx context.Context, key string, body []byte) error {
	sealed, err := Seal(s.keys, key, body)
	if err != nil {
		return &Error{Kind: KindOther, Profile: s.Name(), Op: OpPut, Key: key, Err: err}
	}
	return s.Store.Put(ctx, key, sealed)
}

func (s *sealedStore) PutIf(ctx context.Context, key string, body []byte, version string) error {
	sealed, err := Seal(s.keys, key, body)
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

func (s *sealedStore) open(key string, raw []byte) ([]byte, error) {
	body, _, err := Open(s.keys, key, raw)
	if errors.Is(err, ErrNotSealed) {
		return nil, Refused(s.Name(), key, fmt.Errorf("%w: it has no drover envelope, so it was written without the store key "+
			"(by a drover that did not seal its objects, or by someone else); to migrate a group written so, delete its primary marker "+
			"%s from this store, and the group's primary rewrites its objects there sealed, from its live state (docs/security.md, \"The S3 stores\")",
			ErrNotSealed, markerOf(key)))
	}
	if err != nil {
		return nil, Refused(s.Name(), key, err)
	}
	return body, nil
}

// markerOf is the primary marker beside key: <namespace>/<name>/primary.json.
func markerOf(key string) string {
	parts := bytes.SplitN([]byte(key), []byte("/"), 3)
	if len(parts) < 3 {
		return "<namespace>/<name>/primary.json"
	}
	return string(parts[0]) + "/" + string(parts[1]) + "/primary.json"
}
