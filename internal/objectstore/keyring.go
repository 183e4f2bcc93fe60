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
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
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
