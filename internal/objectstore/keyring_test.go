package objectstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/objectstore"
)

// The edits a rotation makes to each copy of a profile's keys: add a key not current, make it
// current, retire an older one. Each returns a new keyring and leaves the one edited as it was.
func TestTheKeyringEditsOfARotation(t *testing.T) {
	first := testKeyring(t, "k1", testKey("k1", 1))
	added, id := first.WithNewKey()
	if id == "k1" || !added.Has(id) || added.Current != "k1" || first.Has(id) {
		t.Fatalf("WithNewKey: %v with new key %s; want k1 still current, and the keyring edited unchanged (%v)", added, id, first)
	}
	data := added.SecretData()
	parsed, err := objectstore.ParseKeyring(string(data[objectstore.SecretStoreKeysKey]), string(data[objectstore.SecretStoreKeyIDKey]), "copy")
	if err != nil || parsed.Current != "k1" || !parsed.Has(id) || len(parsed.IDs()) != 2 {
		t.Fatalf("the new key does not survive the Secret's form: %v, %v", parsed, err)
	}

	t.Run("another copy takes the same key, once", func(t *testing.T) {
		other := testKeyring(t, "k1", testKey("k1", 1))
		copied, err := other.WithKeyOf(added, id)
		if err != nil || !copied.Has(id) || copied.Current != "k1" {
			t.Fatalf("WithKeyOf = %v, %v", copied, err)
		}
		again, err := copied.WithKeyOf(added, id)
		if err != nil || strings.Join(again.IDs(), ",") != strings.Join(copied.IDs(), ",") {
			t.Errorf("WithKeyOf a key already held = %v, %v; want the keyring as it was", again, err)
		}
		// The key is the same: what one copy seals, the other opens.
		rotated, err := added.WithCurrent(id)
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := objectstore.Seal(rotated, objectKey, []byte("after"))
		if err != nil {
			t.Fatal(err)
		}
		if body, keyID, err := objectstore.Open(copied, objectKey, sealed); err != nil || keyID != id || string(body) != "after" {
			t.Errorf("the copy does not open what the new key sealed: %q, %s, %v", body, keyID, err)
		}
	})
	t.Run("a copy holding another key under the same ID is refused", func(t *testing.T) {
		clash := testKeyring(t, "k1", testKey("k1", 1), testKey(id, 9))
		if _, err := clash.WithKeyOf(added, id); err == nil || !strings.Contains(err.Error(), "another key under ID "+id) {
			t.Errorf("WithKeyOf over another key of the same ID = %v", err)
		}
		if _, err := first.WithKeyOf(first, id); err == nil {
			t.Errorf("WithKeyOf a key the source lacks succeeded")
		}
	})
	t.Run("only a key held becomes current", func(t *testing.T) {
		if _, err := first.WithCurrent(id); err == nil || !strings.Contains(err.Error(), "holds no key "+id) {
			t.Errorf("WithCurrent of a key not held = %v", err)
		}
		rotated, err := added.WithCurrent(id)
		if err != nil || rotated.Current != id || added.Current != "k1" {
			t.Errorf("WithCurrent = %v, %v (the keyring edited: %v)", rotated, err, added)
		}
	})
	t.Run("only an older key is retired", func(t *testing.T) {
		rotated, _ := added.WithCurrent(id)
		if _, err := rotated.Without(id); err == nil || !strings.Contains(err.Error(), "is the current key") {
			t.Errorf("Without the current key = %v", err)
		}
		retired, err := rotated.Without("k1")
		if err != nil || retired.Has("k1") || !rotated.Has("k1") || retired.Current != id {
			t.Errorf("Without k1 = %v, %v (the keyring edited: %v)", retired, err, rotated)
		}
		again, err := retired.Without("k1")
		if err != nil || len(again.IDs()) != 1 {
			t.Errorf("Without a key not held = %v, %v; want the keyring as it was", again, err)
		}
	})
}

// An envelope names its key in clear: what a check before retiring a key reads without the
// keys.
func TestEnvelopeKeyIDReadsTheHeaderWithoutTheKeys(t *testing.T) {
	sealed, err := objectstore.Seal(testKeyring(t, "k7", testKey("k7", 7)), objectKey, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := objectstore.EnvelopeKeyID(sealed); err != nil || id != "k7" {
		t.Errorf("EnvelopeKeyID = %q, %v; want k7", id, err)
	}
	if _, err := objectstore.EnvelopeKeyID([]byte(`{"kind":"PersistentVolume"}`)); !errors.Is(err, objectstore.ErrNotSealed) {
		t.Errorf("EnvelopeKeyID of an object in clear = %v, want ErrNotSealed", err)
	}
	if _, err := objectstore.EnvelopeKeyID(sealed[:8]); err == nil {
		t.Errorf("EnvelopeKeyID of a truncated envelope succeeded")
	}
}

// A reader that compares before rewriting learns which objects are sealed under an older key.
func TestGetCurrentTellsAnObjectSealedUnderAnOlderKey(t *testing.T) {
	ctx := context.Background()
	raw := objectstore.NewFake("s3-east")
	old := testKeyring(t, "k1", testKey("k1", 1))
	rotated := testKeyring(t, "k2", testKey("k1", 1), testKey("k2", 2))
	if err := objectstore.Sealed(raw, old).Put(ctx, "g/db/pvs/a.json", []byte("a")); err != nil {
		t.Fatal(err)
	}
	store := objectstore.Sealed(raw, rotated)
	if err := store.Put(ctx, "g/db/pvs/b.json", []byte("b")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"g/db/pvs/a.json": false, "g/db/pvs/b.json": true} {
		body, current, err := objectstore.GetCurrent(ctx, store, key)
		if err != nil || current != want || len(body) != 1 {
			t.Errorf("GetCurrent(%s) = %q, %v, %v; want current %v", key, body, current, err, want)
		}
		_, version, current, err := objectstore.GetVersionCurrent(ctx, store, key)
		if err != nil || current != want || version == "" {
			t.Errorf("GetVersionCurrent(%s) = %q, %v, %v; want current %v", key, version, current, err, want)
		}
	}
	// A store that does not seal calls every object current.
	if _, current, err := objectstore.GetCurrent(ctx, raw, "g/db/pvs/a.json"); err != nil || !current {
		t.Errorf("GetCurrent of a store that does not seal = %v, %v", current, err)
	}
}
