package lab

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certValidity is long on purpose: a lab left running over a holiday must still start.
const certValidity = 5 * 365 * 24 * time.Hour

// pki is the set of keys and certificates of one lab cluster, kept under <cluster>/pki.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// ensure creates the cluster's CA, API server serving certificate and service-account key pair
// once; later calls keep the existing files so kubeconfigs handed out stay valid across restarts.
func (p pki) ensure() error {
	if _, err := os.Stat(p.path("ca.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("failed to create pki directory %s: %w", p.dir, err)
	}
	caKey, caDER, caCert, err := newCA()
	if err != nil {
		return err
	}
	servingKey, servingDER, err := newServingCert(caCert, caKey)
	if err != nil {
		return err
	}

	// Service-account tokens are signed with RSA, the algorithm every Kubernetes component accepts.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("failed to generate service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return fmt.Errorf("failed to encode service-account public key: %w", err)
	}

	files := []struct {
		name  string
		block *pem.Block
	}{
		{"ca.crt", &pem.Block{Type: "CERTIFICATE", Bytes: caDER}},
		{"apiserver.crt", &pem.Block{Type: "CERTIFICATE", Bytes: servingDER}},
		{"sa.pub", &pem.Block{Type: "PUBLIC KEY", Bytes: saPub}},
		{"sa.key", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}},
	}
	for _, k := range []struct {
		name string
		key  *ecdsa.PrivateKey
	}{{"ca.key", caKey}, {"apiserver.key", servingKey}} {
		der, err := x509.MarshalECPrivateKey(k.key)
		if err != nil {
			return fmt.Errorf("failed to encode %s: %w", k.name, err)
		}
		files = append(files, struct {
			name  string
			block *pem.Block
		}{k.name, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}})
	}
	// ca.crt is written last: its presence is what marks the pki as complete.
	for i := len(files) - 1; i >= 0; i-- {
		if err := os.WriteFile(p.path(files[i].name), pem.EncodeToMemory(files[i].block), 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", files[i].name, err)
		}
	}
	return nil
}

// newCA makes the cluster's certificate authority: its key, its certificate (DER and parsed).
func newCA() (*ecdsa.PrivateKey, []byte, *x509.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "drover-lab-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to parse CA certificate: %w", err)
	}
	return caKey, caDER, caCert, nil
}

// newServingCert makes the API server's serving key and certificate, signed by the CA.
func newServingCert(caCert *x509.Certificate, caKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte, error) {
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate serving key: %w", err)
	}
	servingTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTmpl, caCert, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create serving certificate: %w", err)
	}
	return servingKey, servingDER, nil
}

// clientCert issues a client certificate for user in groups, signed by the cluster's CA. The API
// server authenticates it as that user: groups {"system:masters"} is a cluster administrator.
func (p pki) clientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// issue signs a new key's certificate of tmpl's subject, names and extended key usages with the
// cluster's CA.
func (p pki) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	caCert, caKey, err := p.loadCA()
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate a key for %s: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode key of %s: %w", tmpl.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// apiServerKubeletClient is the user the API server reaches kubelets as (its
// --kubelet-client-certificate), bound to system:kubelet-api-admin (bootstrap.go) as kubeadm
// binds its apiserver-kubelet-client.
const apiServerKubeletClient = "kube-apiserver-kubelet-client"

// ensureKubeletCerts writes, once, the lab kubelet's serving certificate (kubelet.crt, for the
// node's address 127.0.0.1 and its name) and the API server's client certificate for kubelets
// (apiserver-kubelet-client.crt), both signed by the cluster's CA, which each side checks the
// other's against: the API server with --kubelet-certificate-authority, the kubelet with its
// --client-ca-file.
func (p pki) ensureKubeletCerts(nodeName string) error {
	certs := []struct {
		name string
		tmpl *x509.Certificate
	}{
		{"kubelet", &x509.Certificate{Subject: pkix.Name{CommonName: nodeName}, DNSNames: []string{nodeName},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"apiserver-kubelet-client", &x509.Certificate{Subject: pkix.Name{CommonName: apiServerKubeletClient},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	}
	for _, c := range certs {
		if _, err := os.Stat(p.path(c.name + ".crt")); err == nil {
			continue
		}
		certPEM, keyPEM, err := p.issue(c.tmpl)
		if err != nil {
			return err
		}
		// The key first: the certificate's presence marks the pair as complete.
		if err := os.WriteFile(p.path(c.name+".key"), keyPEM, 0o600); err != nil {
			return fmt.Errorf("failed to write %s.key: %w", c.name, err)
		}
		if err := os.WriteFile(p.path(c.name+".crt"), certPEM, 0o600); err != nil {
			return fmt.Errorf("failed to write %s.crt: %w", c.name, err)
		}
	}
	return nil
}

func (p pki) loadCA() (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read lab CA: %w", err)
	}
	keyPEM, err := os.ReadFile(p.path("ca.key"))
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read lab CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("lab CA files are not PEM; run `drover lab down` and `drover lab up` to recreate the lab")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse lab CA: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse lab CA key: %w", err)
	}
	return cert, key, nil
}

// kubeconfig builds a kubeconfig for server that authenticates as user in groups.
func (p pki) kubeconfig(clusterName, server, user string, groups []string) ([]byte, error) {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("failed to read lab CA: %w", err)
	}
	certPEM, keyPEM, err := p.clientCert(user, groups)
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = clusterName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to encode kubeconfig for %s: %w", clusterName, err)
	}
	return out, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still produce a usable lab.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
