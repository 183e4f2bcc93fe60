package objectstore_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/objectstore"
)

// A store whose certificate a private CA signed is trusted through its profile's CA bundle, and
// only through it: the same profile without the bundle fails on the certificate.
func TestS3StoreTrustsAPrivateCAOnlyThroughItsProfilesCABundle(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte("over TLS"))
	}))
	t.Cleanup(srv.Close)
	p := objectstore.Profile{
		Name: "s3-private-ca", Endpoint: srv.URL, Bucket: "drover",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "not-a-real-secret",
	}
	untrusting, err := objectstore.NewS3(p)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = untrusting.Get(context.Background(), "vrg/a")
	g.Expect(err).To(MatchError(ContainSubstring("certificate")), "without the bundle the store's certificate is not trusted")

	p.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	trusting, err := objectstore.NewS3(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(trusting.Get(context.Background(), "vrg/a")).To(Equal([]byte("over TLS")))
}
