package objectstore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/objectstore"
)

// testKey is a fixed store key for id: 32 bytes of b, in SecretStoreKeysKey's form.
func testKey(id string, b byte) string {
	return fmt.Sprintf("%s:%s", id, encodeKey(bytes.Repeat([]byte{b}, objectstore.StoreKeySize)))
}

func encodeKey(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func testKeyring(t testing.TB, current string, lines ...string) objectstore.Keyring {
	t.Helper()
	k, err := objectstore.ParseKeyring(strings.Join(lines, "\n"), current, "Secret drover-system/s3-east")
	if err != nil {
		t.Fatalf("ParseKeyring: %v", err)
	}
	return k
}

const objectKey = "app-dr/db/kubeobjects.json"

func TestAnEnvelopeOpensOnlyUnderItsKeyAndObject(t *testing.T) {
	k1 := testKeyring(t, "k1", testKey("k1", 1))
	body := []byte(`{"kind":"Secret","metadata":{"name":"db-password"},"data":{"password":"aHVudGVyMg=="}}`)
	sealed, err := objectstore.Seal(k1, objectKey, body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("db-password")) || bytes.Contains(sealed, []byte("aHVudGVyMg")) {
		t.Fatalf("the envelope holds the object in clear: %q", sealed)
	}
	if len(sealed) > len(body)+objectstore.EnvelopeOverhead {
		t.Errorf("the envelope adds %d bytes, more than EnvelopeOverhead %d", len(sealed)-len(body), objectstore.EnvelopeOverhead)
	}
	t.Run("it opens under its key and object key", func(t *testing.T) {
		got, id, err := objectstore.Open(k1, objectKey, sealed)
		if err != nil || id != "k1" || !bytes.Equal(got, body) {
			t.Fatalf("Open = %q, %q, %v; want the body, k1, nil", got, id, err)
		}
	})
	t.Run("every altered byte is refused, naming the key ID", func(t *testing.T) {
		for i := range sealed {
			altered := bytes.Clone(sealed)
			altered[i] ^= 0x01
			_, _, err := objectstore.Open(k1, objectKey, altered)
			if err == nil {
				t.Fatalf("byte %d altered: the envelope still opens", i)
			}
		}
		altered := bytes.Clone(sealed)
		altered[len(altered)-1] ^= 0x80
		_, _, err := objectstore.Open(k1, objectKey, altered)
		if err == nil || !strings.Contains(err.Error(), "store key ID k1") {
			t.Fatalf("the last byte altered: %v; want an error naming store key ID k1", err)
		}
	})
	t.Run("an envelope moved to another object key is refused", func(t *testing.T) {
		if _, _, err := objectstore.Open(k1, "other-dr/db/kubeobjects.json", sealed); err == nil {
			t.Fatal("an envelope opened under another object key")
		}
	})
	t.Run("another store's key does not open it", func(t *testing.T) {
		other := testKeyring(t, "k1", testKey("k1", 2))
		if _, _, err := objectstore.Open(other, objectKey, sealed); err == nil {
			t.Fatal("an envelope opened under another key of the same ID")
		}
	})
	t.Run("a key ID the keyring does not hold is named", func(t *testing.T) {
		other := testKeyring(t, "k2", testKey("k2", 2))
		_, id, err := objectstore.Open(other, objectKey, sealed)
		if err == nil || id != "k1" || !strings.Contains(err.Error(), "store key ID k1, which Secret drover-system/s3-east does not hold") {
			t.Fatalf("Open = %q, %v; want k1 and an error naming it", id, err)
		}
	})
	t.Run("a plaintext object is not sealed", func(t *testing.T) {
		if _, _, err := objectstore.Open(k1, objectKey, body); !errors.Is(err, objectstore.ErrNotSealed) {
			t.Fatalf("Open of a plaintext object = %v, want ErrNotSealed", err)
		}
	})
}

func TestARotatedKeyringSealsWithTheNewKeyAndOpensWithBoth(t *testing.T) {
	old := testKeyring(t, "k1", testKey("k1", 1))
	rotated := testKeyring(t, "k2", testKey("k1", 1), testKey("k2", 2))
	before, err := objectstore.Seal(old, objectKey, []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := objectstore.Seal(rotated, objectKey, []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	if got, id, err := objectstore.Open(rotated, objectKey, before); err != nil || id != "k1" || string(got) != "before" {
		t.Errorf("an object of the old key: %q, %q, %v", got, id, err)
	}
	if got, id, err := objectstore.Open(rotated, objectKey, after); err != nil || id != "k2" || string(got) != "after" {
		t.Errorf("an object of the new key: %q, %q, %v", got, id, err)
	}
	if _, _, err := objectstore.Open(old, objectKey, after); err == nil || !strings.Contains(err.Error(), "k2") {
		t.Errorf("a cluster without the new key: %v, want an error naming k2", err)
	}
}

func TestASealedStoreRefusesWhatDoesNotOpenAndKeepsConditionalWrites(t *testing.T) {
	ctx := context.Background()
	raw := objectstore.NewFake("s3-east")
	store := objectstore.Sealed(raw, testKeyring(t, "k1", testKey("k1", 1)))
	if err := store.PutIf(ctx, "g/db/primary.json", []byte(`{"epoch":1}`), ""); err != nil {
		t.Fatal(err)
	}
	body, version, err := store.GetVersion(ctx, "g/db/primary.json")
	if err != nil || string(body) != `{"epoch":1}` || version == "" {
		t.Fatalf("GetVersion = %q, %q, %v", body, version, err)
	}
	if err := store.PutIf(ctx, "g/db/primary.json", []byte(`{"epoch":2}`), ""); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("PutIf over an existing object with no version = %v, want ErrPreconditionFailed", err)
	}
	if err := store.PutIf(ctx, "g/db/primary.json", []byte(`{"epoch":2}`), version); err != nil {
		t.Errorf("PutIf at the version read = %v", err)
	}
	stored, _ := raw.Get(ctx, "g/db/primary.json")
	stored[len(stored)-1] ^= 1
	_ = raw.Put(ctx, "g/db/primary.json", stored)
	_, _, err = store.GetVersion(ctx, "g/db/primary.json")
	var se *objectstore.Error
	if !errors.As(err, &se) || se.Kind != objectstore.KindRefused || !strings.Contains(err.Error(), `S3 profile s3-east`) ||
		!strings.Contains(err.Error(), `"g/db/primary.json"`) || !strings.Contains(err.Error(), "store key ID k1") {
		t.Errorf("an altered marker: %v; want a refusal naming the store, the object and the key ID", err)
	}
	_ = raw.Put(ctx, "g/db/pvs/pv-1.json", []byte(`{"kind":"PersistentVolume"}`))
	_, err = store.Get(ctx, "g/db/pvs/pv-1.json")
	if !errors.Is(err, objectstore.ErrRefused) || !errors.Is(err, objectstore.ErrNotSealed) || !strings.Contains(err.Error(), "delete its primary marker g/db/primary.json") {
		t.Errorf("a plaintext object: %v; want a refusal saying how to migrate", err)
	}
}

func TestParseKeyringRefusesWhatCannotSeal(t *testing.T) {
	good := testKey("k1", 1)
	for _, tc := range []struct {
		name, keys, current, want string
	}{
		{name: "no key", keys: "", current: "k1", want: "holds no key"},
		{name: "no current key", keys: good, current: "", want: "names no current key"},
		{name: "a current key not held", keys: good, current: "k2", want: "names key k2, which store-keys does not hold"},
		{name: "a short key", keys: "k1:AAAA", current: "k1", want: "is not 32 bytes"},
		{name: "a line without an ID", keys: "AAAA", current: "k1", want: "is not <key ID>:<base64 key>"},
		{name: "an ID with a slash", keys: "k/1:" + strings.SplitN(good, ":", 2)[1], current: "k/1", want: "may hold only"},
		{name: "an ID twice", keys: good + "\n" + good, current: "k1", want: "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := objectstore.ParseKeyring(tc.keys, tc.current, "Secret s")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseKeyring = %v, want an error containing %q", err, tc.want)
			}
			if secret := strings.SplitN(good, ":", 2)[1]; strings.Contains(err.Error(), secret) {
				t.Fatalf("the error repeats the key: %v", err)
			}
		})
	}
	k := testKeyring(t, "k1", good)
	if s := fmt.Sprintf("%v %#v %s", k, k, k); strings.Contains(s, strings.SplitN(good, ":", 2)[1]) {
		t.Fatalf("a printed keyring shows its key: %s", s)
	}
}

// FuzzOpenEnvelope feeds Open what a holder of write access to a bucket may put there: it must
// never panic, and nothing opens unless it was sealed under the keyring for that object key.
func FuzzOpenEnvelope(f *testing.F) {
	k := testKeyring(f, "k1", testKey("k1", 1))
	sealed, err := objectstore.Seal(k, objectKey, []byte(`{"version":1}`))
	if err != nil {
		f.Fatal(err)
	}
	// Seeds are copies: the fuzzing engine may mutate what it is given in place.
	f.Add(bytes.Clone(sealed), objectKey)
	f.Add(bytes.Clone(sealed[:len(sealed)-1]), objectKey)
	f.Add(bytes.Clone(sealed[:7]), objectKey)
	f.Add([]byte("DRV\x1e\x01\x00"), objectKey)
	f.Add([]byte("DRV\x1e\x02\x02k1"), objectKey)
	f.Add([]byte("DRV\x1e\x01\xffk1"), objectKey)
	f.Add([]byte(`{"cluster":"east","epoch":1}`), "g/db/primary.json")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, envelope []byte, key string) {
		body, id, err := objectstore.Open(k, key, envelope)
		if err != nil {
			return
		}
		if id != "k1" {
			t.Fatalf("opened under key ID %q", id)
		}
		// The only body ever sealed under this key, for this one object key (each fuzzing worker
		// seals its own, with its own nonce).
		if string(body) != `{"version":1}` || key != objectKey {
			t.Fatalf("opened an envelope drover did not seal for %q: %q", key, body)
		}
	})
}

// FuzzParseKeyring feeds ParseKeyring what a person may put in a profile's Secret: it never
// panics, and a keyring it accepts seals and opens.
func FuzzParseKeyring(f *testing.F) {
	f.Add(testKey("k1", 1), "k1")
	f.Add(testKey("k1", 1)+"\n"+testKey("k2", 2), "k2")
	f.Add("# comment\n k1 : "+strings.SplitN(testKey("k1", 1), ":", 2)[1]+" \n", "k1\n")
	f.Add("k1:", "k1")
	f.Add(":", "")
	f.Fuzz(func(t *testing.T, keys, current string) {
		k, err := objectstore.ParseKeyring(keys, current, "Secret s")
		if err != nil {
			return
		}
		sealed, err := objectstore.Seal(k, objectKey, []byte("x"))
		if err != nil {
			t.Fatalf("an accepted keyring does not seal: %v", err)
		}
		if got, _, err := objectstore.Open(k, objectKey, sealed); err != nil || string(got) != "x" {
			t.Fatalf("an accepted keyring does not open what it sealed: %q, %v", got, err)
		}
	})
}

// BenchmarkSealOpen seals and opens a capture of a typical size (a few dozen objects, 64 KiB).
func BenchmarkSealOpen(b *testing.B) {
	k := testKeyring(b, "k1", testKey("k1", 1))
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				sealed, err := objectstore.Seal(k, objectKey, body)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := objectstore.Open(k, objectKey, sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
