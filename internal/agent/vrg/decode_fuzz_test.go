package vrg

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// FuzzReadMarker feeds ReadMarkerVersion a primary marker as a store may hold it: written by
// another agent, another version, or cut short. It must never panic; an error names the store
// and the key; a marker it accepts reads back the same after this agent writes it.
func FuzzReadMarker(f *testing.F) {
	f.Add([]byte(`{"cluster":"east","epoch":3,"since":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"cluster":"east","epoch":-1}`))
	f.Add([]byte(`{"cluster":"east","epoch":1e99}`))
	f.Add([]byte(`{"cluster":"east","epoch":3,"since":"yesterday"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"cluster":"west","epoch":4,"data":"claims/3-east/"}`))
	f.Add([]byte(`{"cluster":"west","epoch":4,"data":"claims/3-east/../../../kube-system/"}`))
	f.Add([]byte(`{"cluster":"../west","epoch":4,"data":"claims/9-west/"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		const prefix = "app/db/"
		store := objectstore.NewFake("s3-east")
		if err := store.Put(ctx, prefix+MarkerKey, body); err != nil {
			t.Fatal(err)
		}
		m, _, err := ReadMarkerVersion(ctx, store, prefix)
		if err != nil {
			if !strings.Contains(err.Error(), "S3 profile s3-east") || !strings.Contains(err.Error(), prefix+MarkerKey) {
				t.Fatalf("the error does not name the store and the key: %v", err)
			}
			return
		}
		if data := ClaimPrefix(prefix, m); data != prefix && (!strings.HasPrefix(data, prefix+claimsDir) || strings.Contains(data, "..")) {
			t.Fatalf("an accepted marker %+v names data %q outside the group's claims", m, data)
		}
		again := objectstore.NewFake("s3-west")
		if err := PutMarker(ctx, again, prefix, *m, ""); err != nil {
			t.Fatalf("an accepted marker %+v cannot be written: %v", m, err)
		}
		m2, err := ReadMarker(ctx, again, prefix)
		if err != nil || m2.Cluster != m.Cluster || m2.Epoch != m.Epoch || !m2.Since.Equal(&m.Since) || m2.Data != m.Data {
			t.Fatalf("marker %+v read back as %+v, %v", m, m2, err)
		}
	})
}

// FuzzEpochClaim feeds epochClaimOf the annotation a person may have edited: it must never
// panic, never guess a claim (an error says how to claim anew), and a claim it accepts
// encodes and decodes to itself.
func FuzzEpochClaim(f *testing.F) {
	f.Add(`{"epoch":2,"generation":5,"since":"2026-01-02T03:04:05Z"}`)
	f.Add(`{"epoch":"2"}`)
	f.Add(`2`)
	f.Fuzz(func(t *testing.T, value string) {
		vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db",
			Annotations: map[string]string{AnnotationPrimaryEpoch: value}}}
		c, err := epochClaimOf(vrg)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "remove it to claim anew") {
				t.Fatalf("the error does not say what to do: %v", err)
			}
			return
		case c == nil:
			if value != "" {
				t.Fatalf("annotation %q read as no claim", value)
			}
			return
		}
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("claim %+v does not encode: %v", c, err)
		}
		vrg.Annotations[AnnotationPrimaryEpoch] = string(raw)
		c2, err := epochClaimOf(vrg)
		if err != nil || c2.Epoch != c.Epoch || c2.Generation != c.Generation || !c2.Since.Equal(&c.Since) {
			t.Fatalf("claim %+v read back as %+v, %v", c, c2, err)
		}
	})
}
