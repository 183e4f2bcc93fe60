package webhook

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// selfSignedValidity is how long a self-signed serving certificate lasts: longer than any lab.
const selfSignedValidity = 365 * 24 * time.Hour

// File names that SelfSigned.WriteFiles writes, those of a kubernetes.io/tls Secret plus the CA.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// SelfSigned is a CA and a serving certificate it signed, made in memory for the lab and tests.
// In production the serving certificate comes from files (cert-manager or the installer).
type SelfSigned struct {
	// CABundle is the CA certificate, PEM: the configuration's clientConfig.caBundle.
	CABundle []byte
	// CertPEM and KeyPEM are the serving certificate and its key, PEM.
	CertPEM, KeyPEM []byte

	cert tls.Certificate
}

// NewSelfSigned makes a CA and a serving certificate for hosts: IP addresses (127.0.0.1 in the
// lab) and DNS names (a Service's <name>.<namespace>.svc).
func NewSelfSigned(hosts ...string) (*SelfSigned, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate the fence's CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "drover-fence-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign the fence's CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the fence's CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate the fence's serving key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "drover-fence"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign the fence's serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the fence's serving key: %w", err)
	}
	s := &SelfSigned{
		CABundle: pemBlock("CERTIFICATE", caDER),
		CertPEM:  pemBlock("CERTIFICATE", der),
		KeyPEM:   pemBlock("EC PRIVATE KEY", keyDER),
	}
	if s.cert, err = tls.X509KeyPair(s.CertPEM, s.KeyPEM); err != nil {
		return nil, fmt.Errorf("failed to load the fence's serving certificate: %w", err)
	}
	return s, nil
}

// GetCertificate serves the certificate; it fits ServerOptions.GetCertificate.
func (s *SelfSigned) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return &s.cert, nil
}

// WriteFiles writes tls.crt, tls.key (0600) and ca.crt into dir, the layout production reads.
func (s *SelfSigned) WriteFiles(dir string) error {
	for name, data := range map[string][]byte{CertFile: s.CertPEM, KeyFile: s.KeyPEM, CAFile: s.CABundle} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", name, err)
		}
	}
	return nil
}

func pemBlock(kind string, der []byte) []byte {
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: kind, Bytes: der})
	return b.Bytes()
}
