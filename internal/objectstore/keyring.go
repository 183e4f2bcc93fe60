package objectstore

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Keys of an S3 profile's Secret that hold the store keys, which seal every object drover
// writes to the profile's store (envelope.go). They live only in Kubernetes Secrets, on every
// managed cluster (and the hub's copy that `drover cluster join` keeps), never in a store.
const (
	// SecretStoreKeysKey holds the keys, one per line: "<key ID>:<32 bytes in standard base64>".
	// Every key listed opens what it sealed, so an older key stays listed until every object is
	// rewritten under the current one.
	SecretStoreKeysKey = "store-keys"
	// SecretStoreKeyIDKey names the current key, the one every new object is sealed with.
	SecretStoreKeyIDKey = "store-key-id"
)

// StoreKeySize is the size of a store key: AES-256.
const StoreKeySize = 32

// maxKeyIDLen bounds a key ID: it is written, as it is, in every envelope's header.
const maxKeyIDLen = 32

// Keyring is the store keys of one S3 profile: the current one seals, every one opens.
type Keyring struct {
	// Current is the ID of the key that seals.
	Current string
	keys    map[string][]byte
	// Source names where the keys came from (a Secret), for messages.
	Source string
}

// String names the keyring's key IDs and source, never a key.
func (k Keyring) String() string {
	return fmt.Sprintf("store keys %s (current %s) from %s", strings.Join(k.IDs(), ","), k.Current, k.Source)
}

// GoString is String, so %#v prints no key either.
func (k Keyring) GoString() string { return k.String() }

// IDs are the key IDs of the keyring, sorted.
func (k Keyring) IDs() []string {
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Empty reports whether the keyring holds no key.
func (k Keyring) Empty() bool { return len(k.keys) == 0 }

// key returns the key of id.
func (k Keyring) key(id string) ([]byte, bool) {
	b, ok := k.keys[id]
	return b, ok
}

// validKeyID reports why id cannot be a key ID: 1 to 32 letters, digits, '-', '_' or '.'.
func validKeyID(id string) error {
	if id == "" || len(id) > maxKeyIDLen {
		return fmt.Errorf("key ID %q must be 1 to %d characters", id, maxKeyIDLen)
	}
	for _, r := range id {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '.' {
			return fmt.Errorf("key ID %q may hold only letters, digits, '-', '_' and '.'", id)
		}
	}
	return nil
}

// ParseKeyring reads the keys of keysText (SecretStoreKeysKey's form) with current as the key
// that seals; source names them in messages. Errors never repeat a key.
func ParseKeyring(keysText, current, source string) (Keyring, error) {
	k := Keyring{Current: strings.TrimSpace(current), keys: map[string][]byte{}, Source: source}
	for n, line := range strings.Split(keysText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, encoded, ok := strings.Cut(line, ":")
		id = strings.TrimSpace(id)
		if !ok {
			return Keyring{}, fmt.Errorf("line %d of %s is not <key ID>:<base64 key>", n+1, SecretStoreKeysKey)
		}
		if err := validKeyID(id); err != nil {
			return Keyring{}, fmt.Errorf("line %d of %s: %w", n+1, SecretStoreKeysKey, err)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
		if err != nil || len(key) != StoreKeySize {
			return Keyring{}, fmt.Errorf("key %s in %s is not %d bytes in standard base64: generate one with `head -c %d /dev/urandom | base64`",
				id, SecretStoreKeysKey, StoreKeySize, StoreKeySize)
		}
		if _, dup := k.keys[id]; dup {
			return Keyring{}, fmt.Errorf("key ID %s appears twice in %s", id, SecretStoreKeysKey)
		}
		k.keys[id] = key
	}
	switch {
	case len(k.keys) == 0:
		return Keyring{}, fmt.Errorf("%s holds no key", SecretStoreKeysKey)
	case k.Current == "":
		return Keyring{}, fmt.Errorf("%s names no current key: set it to one of the IDs in %s (%s)", SecretStoreKeyIDKey, SecretStoreKeysKey, strings.Join(k.IDs(), ", "))
	}
	if _, ok := k.keys[k.Current]; !ok {
		return Keyring{}, fmt.Errorf("%s names key %s, which %s does not hold (it holds %s)", SecretStoreKeyIDKey, k.Current, SecretStoreKeysKey, strings.Join(k.IDs(), ", "))
	}
	return k, nil
}

// NewKeyID returns a fresh key ID: "k" and 8 random lowercase letters and digits.
func NewKeyID() string { return "k" + strings.ToLower(rand.Text()[:8]) }

// SecretData is the keyring in a profile Secret's form: SecretStoreKeysKey and
// SecretStoreKeyIDKey; empty for an empty keyring.
func (k Keyring) SecretData() map[string][]byte {
	if k.Empty() {
		return map[string][]byte{}
	}
	var lines []string
	for _, id := range k.IDs() {
		lines = append(lines, id+":"+base64.StdEncoding.EncodeToString(k.keys[id]))
	}
	return map[string][]byte{
		SecretStoreKeysKey:  []byte(strings.Join(lines, "\n") + "\n"),
		SecretStoreKeyIDKey: []byte(k.Current),
	}
}

// NewKeyring returns a keyring of one fresh key, current, from source.
func NewKeyring(source string) Keyring {
	id := NewKeyID()
	key := make([]byte, StoreKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics on a broken kernel source)
	return Keyring{Current: id, keys: map[string][]byte{id: key}, Source: source}
}

// errNoKeyring is the error of a profile whose Secret holds no store key.
var errNoKeyring = errors.New("no store key")

// The edits of a keyring that rotating a key makes (`drover cluster rotate-store-key`): each
// returns a new keyring and leaves k as it was, so a caller can compare before and after.

// Has reports whether the keyring holds key id.
func (k Keyring) Has(id string) bool {
	_, ok := k.keys[id]
	return ok
}

// clone returns a copy of k whose key map can be changed.
func (k Keyring) clone() Keyring {
	c := Keyring{Current: k.Current, keys: make(map[string][]byte, len(k.keys)+1), Source: k.Source}
	for id, key := range k.keys {
		c.keys[id] = slices.Clone(key)
	}
	return c
}

// WithNewKey returns the keyring with one more key, fresh from crypto/rand, under a new ID that
// it does not hold yet, and that ID. The current key stays current: a new key is first added
// everywhere, as a reader only, and made current after.
func (k Keyring) WithNewKey() (Keyring, string) {
	out := k.clone()
	id := NewKeyID()
	for out.Has(id) {
		id = NewKeyID()
	}
	key := make([]byte, StoreKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics on a broken kernel source)
	out.keys[id] = key
	return out, id
}

// WithKeyOf returns the keyring holding also key id of from, not current. It is the keyring
// itself when it already holds that key, and an error when it holds another key under that ID
// (or from holds none): two copies that disagree on a key would each refuse what the other
// seals.
func (k Keyring) WithKeyOf(from Keyring, id string) (Keyring, error) {
	key, ok := from.key(id)
	if !ok {
		return Keyring{}, fmt.Errorf("%s holds no key %s to copy", from.Source, id)
	}
	if mine, held := k.key(id); held {
		if !slices.Equal(mine, key) {
			return Keyring{}, fmt.Errorf("%s holds another key under ID %s than %s", k.Source, id, from.Source)
		}
		return k, nil
	}
	out := k.clone()
	out.keys[id] = slices.Clone(key)
	return out, nil
}

// WithCurrent returns the keyring with key id current; an error when it does not hold it.
func (k Keyring) WithCurrent(id string) (Keyring, error) {
	if !k.Has(id) {
		return Keyring{}, fmt.Errorf("%s holds no key %s to make current (it holds %s)", k.Source, id, strings.Join(k.IDs(), ", "))
	}
	out := k.clone()
	out.Current = id
	return out, nil
}

// Without returns the keyring without key id (the keyring itself when it does not hold it); an
// error when id is the current key, which seals every new object.
func (k Keyring) Without(id string) (Keyring, error) {
	if id == k.Current {
		return Keyring{}, fmt.Errorf("key %s is the current key of %s, which seals every new object: rotate to a new key first", id, k.Source)
	}
	if !k.Has(id) {
		return k, nil
	}
	out := k.clone()
	delete(out.keys, id)
	return out, nil
}
