package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// startServer serves fences on 127.0.0.1 with the given certificate source until the test ends.
func startServer(t testing.TB, g Gomega, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), fences Fences) *Server {
	srv, err := NewServer(ServerOptions{Address: "127.0.0.1:0", GetCertificate: getCert, Fences: fences})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the server did not stop cleanly: %v", err)
		}
	})
	return srv
}

func httpsClient(caBundle []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
	}}
}

// review posts an AdmissionReview of req as the API server does and returns the answer.
func review(g Gomega, c *http.Client, url string, req admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req,
	})
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	out := &admissionv1.AdmissionReview{}
	g.Expect(json.NewDecoder(resp.Body).Decode(out)).To(Succeed())
	g.Expect(out.Response).NotTo(BeNil())
	return out.Response
}

func TestServer(t *testing.T) {
	fenced := &fakeFences{fenced: map[string]Fence{"app/data-db-0": demoting}}
	req := request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))).AdmissionRequest

	t.Run("a certificate read from files serves the fence to a client that trusts its CA", func(t *testing.T) {
		g := NewWithT(t)
		certs, err := NewSelfSigned("127.0.0.1", "drover-agent.drover-system.svc")
		g.Expect(err).NotTo(HaveOccurred())
		dir := t.TempDir()
		g.Expect(certs.WriteFiles(dir)).To(Succeed())
		watcher, err := certwatcher.New(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
		g.Expect(err).NotTo(HaveOccurred())
		srv := startServer(t, g, watcher.GetCertificate, fenced)

		resp := review(g, httpsClient(certs.CABundle), srv.URL(), req)
		g.Expect(resp.UID).To(Equal(req.UID))
		g.Expect(resp.Allowed).To(BeFalse())
		g.Expect(resp.Result.Message).To(ContainSubstring("VolumeReplicationGroup app/db is being demoted"))
	})

	t.Run("a client that does not trust the CA cannot talk to the fence", func(t *testing.T) {
		g := NewWithT(t)
		certs, err := NewSelfSigned("127.0.0.1")
		g.Expect(err).NotTo(HaveOccurred())
		other, err := NewSelfSigned("127.0.0.1")
		g.Expect(err).NotTo(HaveOccurred())
		srv := startServer(t, g, certs.GetCertificate, fenced)
		_, err = httpsClient(other.CABundle).Post(srv.URL(), "application/json", bytes.NewReader([]byte("{}")))
		g.Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	})

	t.Run("a server without a certificate or fences is refused", func(t *testing.T) {
		g := NewWithT(t)
		_, err := NewServer(ServerOptions{Address: "127.0.0.1:0", Fences: fenced})
		g.Expect(err).To(MatchError(ContainSubstring("serving certificate")))
		certs, err := NewSelfSigned("127.0.0.1")
		g.Expect(err).NotTo(HaveOccurred())
		_, err = NewServer(ServerOptions{Address: "127.0.0.1:0", GetCertificate: certs.GetCertificate})
		g.Expect(err).To(MatchError(ContainSubstring("needs Fences")))
	})
}

// BenchmarkServerAdmission measures one admission review over HTTPS (keep-alive), as the API
// server sends it, with fences that answer at once: the fence's own cost on top of its reads.
func BenchmarkServerAdmission(b *testing.B) {
	g := NewWithT(b)
	certs, err := NewSelfSigned("127.0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	srv := startServer(b, g, certs.GetCertificate, &fakeFences{})
	c := httpsClient(certs.CABundle)
	req := request(admissionv1.Create, "Pod", testPod("db-0", pvcVolume("data", "data-db-0"))).AdmissionRequest
	for b.Loop() {
		review(g, c, srv.URL(), req)
	}
}
