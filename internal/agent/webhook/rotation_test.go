package webhook_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/drover-io/drover/internal/agent/webhook"
)

// rotationTimeout bounds each wait for the rotator; it checks at once and backs off by seconds
// while it waits for the certificate files.
const rotationTimeout = 60 * time.Second

// rotationConfiguration is the fence's configuration as the release manifests install it:
// through a Service, without a caBundle. Its selector matches no namespace of the lab.
func rotationConfiguration(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: webhook.WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "rotation", Name: "drover-fence", Path: ptr.To(webhook.Path), Port: ptr.To[int32](443),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"rotation.test/never": "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// installerApply applies obj as an installer does (kubectl apply --server-side).
func installerApply(ctx context.Context, c client.Client, obj client.Object) error {
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	return c.Patch(ctx, obj, client.Apply, client.FieldOwner("kubectl")) //nolint:staticcheck // server-side apply of an unstructured manifest, as kubectl does
}

// kubeletMount copies the Secret's certificate into dir, as a kubelet updates a Secret volume.
func kubeletMount(ctx context.Context, c client.Client, key types.NamespacedName, dir string) {
	for ctx.Err() == nil {
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err == nil && len(s.Data[webhook.CertFile]) > 0 {
			_ = os.WriteFile(filepath.Join(dir, webhook.KeyFile), s.Data[webhook.KeyFile], 0o600)
			_ = os.WriteFile(filepath.Join(dir, webhook.CertFile), s.Data[webhook.CertFile], 0o600)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func parseCert(g Gomega, raw []byte) *x509.Certificate {
	block, _ := pem.Decode(raw)
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// nearExpiry signs, with the Secret's CA, a serving certificate for dnsName that expires in a
// minute: far inside the rotator's renewal window.
func nearExpiry(g Gomega, s *corev1.Secret, dnsName string) (certPEM, keyPEM []byte) {
	ca := parseCert(g, s.Data["ca.crt"])
	block, _ := pem.Decode(s.Data["ca.key"])
	g.Expect(block).NotTo(BeNil())
	caKey, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return certPEM, keyPEM
}

func TestCertRotatorFillsTheSecretInjectsTheCAAndRenewsACertificateNearExpiry(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(rotationTimeout)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, err := testLab.Client("east")
	g.Expect(err).NotTo(HaveOccurred())
	east, err := testLab.Cluster("east")
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := east.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())

	const configurationName, dnsName = "rotation-test-fence", "drover-fence.rotation.svc"
	secretKey := types.NamespacedName{Namespace: "rotation", Name: "drover-fence-cert"}
	g.Expect(c.Create(ctx, namespace("rotation"))).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rotation", Name: secretKey.Name}})).To(Succeed())
	g.Expect(installerApply(ctx, c, rotationConfiguration(configurationName))).To(Succeed())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: clientgoscheme.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	ready, err := webhook.AddCertRotator(mgr, webhook.CertRotation{
		Secret: secretKey, DNSName: dnsName, Configuration: configurationName, CertDir: dir,
	})
	g.Expect(err).NotTo(HaveOccurred())
	files := webhook.NewCertFiles(dir, ready)
	g.Expect(mgr.Add(files)).To(Succeed())
	g.Expect(webhook.ReadyCheck(ready)(nil)).To(HaveOccurred(), "ready before the manager started")
	go kubeletMount(ctx, c, secretKey, dir)
	go func() { _ = mgr.Start(ctx) }()

	t.Log("the Secret is filled, the files are in place and the CA is injected: the agent is ready")
	g.Eventually(ready).Should(BeClosed())
	g.Expect(webhook.ReadyCheck(ready)(nil)).To(Succeed())
	secret := &corev1.Secret{}
	g.Expect(c.Get(ctx, secretKey, secret)).To(Succeed())
	ca := parseCert(g, secret.Data["ca.crt"])
	serving := parseCert(g, secret.Data[webhook.CertFile])
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = serving.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots})
	g.Expect(err).NotTo(HaveOccurred(), "the serving certificate verifies against the CA for the Service's name")
	caBundle := func(g Gomega) []byte {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: configurationName}, vwc)).To(Succeed())
		return vwc.Webhooks[0].ClientConfig.CABundle
	}
	g.Expect(caBundle(g)).To(Equal(secret.Data["ca.crt"]))
	g.Eventually(func(g Gomega) {
		got, err := files.GetCertificate(nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Leaf.Raw).To(Equal(serving.Raw))
	}).Should(Succeed(), "the server presents the certificate of the Secret")

	t.Log("installing the manifests again keeps the injected caBundle")
	g.Expect(installerApply(ctx, c, rotationConfiguration(configurationName))).To(Succeed())
	g.Expect(caBundle(g)).To(Equal(secret.Data["ca.crt"]))

	t.Log("a serving certificate near expiry is renewed, signed by the same CA")
	secret.Data[webhook.CertFile], secret.Data[webhook.KeyFile] = nearExpiry(g, secret, dnsName)
	g.Expect(c.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, secretKey, s)).To(Succeed())
		renewed := parseCert(g, s.Data[webhook.CertFile])
		g.Expect(renewed.NotAfter).To(BeTemporally(">", time.Now().Add(webhook.DefaultRenewBefore)))
		g.Expect(s.Data["ca.crt"]).To(Equal(secret.Data["ca.crt"]))
		_, err := renewed.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	g.Expect(caBundle(g)).To(Equal(secret.Data["ca.crt"]))
}

// The rotator calls the certificate ready once tls.crt exists; a key not readable yet is
// retried, not the end of the agent (CI saw "failed to find any PEM data in key input").
func TestCertFilesWaitForAKeyThatIsNotThereYet(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	certs, err := webhook.NewSelfSigned("127.0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(certs.WriteFiles(dir)).To(Succeed())
	key, err := os.ReadFile(filepath.Join(dir, webhook.KeyFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, webhook.KeyFile), nil, 0o600)).To(Succeed())

	ready := make(chan struct{})
	close(ready)
	files := webhook.NewCertFiles(dir, ready)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- files.Start(ctx) }()
	defer cancel()
	g.Consistently(func() error {
		_, err := files.GetCertificate(nil)
		return err
	}).WithTimeout(1500*time.Millisecond).Should(HaveOccurred(), "no certificate while the key is empty")
	g.Expect(done).NotTo(Receive(), "Start keeps waiting for the key, it does not end")

	g.Expect(os.WriteFile(filepath.Join(dir, webhook.KeyFile), key, 0o600)).To(Succeed())
	g.Eventually(func() error {
		_, err := files.GetCertificate(nil)
		return err
	}).WithTimeout(5*time.Second).Should(Succeed(), "the certificate is served once the key is there")
	cancel()
	g.Eventually(done).WithTimeout(5*time.Second).Should(Receive(BeNil()), "Start ends cleanly with its context")
}
