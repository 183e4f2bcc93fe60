package hub_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/lab"
)

// The hub's credential for a managed cluster is the expiring token `drover cluster join`
// issued. The hub renews it after a fraction of its life (--token-renew-after, 0.8); here the
// fraction is tiny, so that a renewal comes within seconds of a token's 8 hours: the Secret's
// token changes, the new one has the same ServiceAccount, binding and lifetime, and works.
func TestTheHubRenewsItsTokenForAManagedClusterBeforeItExpires(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	before, old := kubeconfigToken(g, h, lab.East)

	stop("hub")
	fast := hubOptions()
	fast.TokenRenewAfter = 0.0001 // about 3 s of an 8-hour token
	g.Expect(startHubWith(fast)).To(Succeed())
	t.Cleanup(func() {
		stop("hub")
		if err := startHub(); err != nil {
			t.Errorf("failed to start the suite's hub again: %v", err)
		}
	})

	var renewed string
	var claims gateway.TokenClaims
	g.Eventually(func(g Gomega) {
		renewed, claims = kubeconfigToken(g, h, lab.East)
		g.Expect(renewed).NotTo(Equal(before))
	}).Should(Succeed(), "the hub writes a renewed token into east's kubeconfig Secret")
	g.Expect(claims.IssuedAt).To(BeTemporally(">", old.IssuedAt))
	g.Expect(claims.Lifetime()).To(Equal(old.Lifetime()), "the renewed token lives as long as the one join issued")
	g.Expect(claims.SecretUID).To(Equal(old.SecretUID), "the renewed token is bound to the same Secret, so deleting it still revokes")
	g.Expect(claims.ServiceAccount).To(Equal(old.ServiceAccount))
	g.Expect(tokenClient(g, lab.East, renewed).List(context.Background(), &v1alpha1.VolumeReplicationGroupList{})).To(Succeed(),
		"the renewed token works on east")
	g.Eventually(func(g Gomega) {
		r := reachable(g, h, lab.East)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(r.Reason).To(Equal(v1alpha1.ReasonSucceeded))
	}).Should(Succeed(), "east stays reachable through its renewals")
}

// A token that expired without being renewed (the hub stopped for longer than the rest of its
// life) is refused by the cluster; the DRCluster says so at once and says to join again.
func TestAnExpiredTokenTurnsReachableFalseSayingToJoinAgain(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(lab.West)}
	g.Expect(h.Get(ctx, key, secret)).To(Succeed())
	joined := secret.DeepCopy()
	current, _ := kubeconfigToken(g, h, lab.West)
	expired := resign(g, lab.West, current, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	g.Expect(apierrors.IsUnauthorized(tokenClient(g, lab.West, expired).List(ctx, &v1alpha1.VolumeReplicationGroupList{}))).To(BeTrue(),
		"west refuses the expired token")

	secret.Data[v1alpha1.KubeconfigSecretKey] = []byte(strings.Replace(string(secret.Data[v1alpha1.KubeconfigSecretKey]), current, expired, 1))
	g.Expect(h.Update(ctx, secret)).To(Succeed())
	t.Cleanup(func() {
		s := &corev1.Secret{}
		g.Expect(h.Get(ctx, key, s)).To(Succeed())
		s.Data = joined.Data
		g.Expect(h.Update(ctx, s)).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(reachable(g, h, lab.West).Status).To(Equal(metav1.ConditionTrue)) }).Should(Succeed())
	})
	g.Eventually(func(g Gomega) {
		r := reachable(g, h, lab.West)
		g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(r.Reason).To(Equal(v1alpha1.ReasonCredentialExpired))
		g.Expect(r.Message).To(ContainSubstring("run `drover cluster join west` again"))
	}).Should(Succeed(), "west's DRCluster says its token expired and what to do")
}

// kubeconfigToken returns the token of the hub's kubeconfig Secret for cluster and its claims.
func kubeconfigToken(g Gomega, h client.Client, cluster string) (string, gateway.TokenClaims) {
	secret := &corev1.Secret{}
	g.Expect(h.Get(context.Background(), client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(cluster)}, secret)).To(Succeed())
	kc, err := clientcmd.Load(secret.Data[v1alpha1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	token := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token
	claims, ok := gateway.ParseToken(token)
	g.Expect(ok).To(BeTrue(), "the hub's token for %s is an expiring ServiceAccount token", cluster)
	return token, claims
}

// tokenClient returns a client of a lab cluster that authenticates with token alone.
func tokenClient(g Gomega, cluster, token string) client.Client {
	c, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cfg = rest.AnonymousClientConfig(cfg)
	cfg.BearerToken = token
	admin, err := testLab.Client(cluster, v1alpha1.AddToScheme) // for its scheme and mapper
	g.Expect(err).NotTo(HaveOccurred())
	cl, err := client.New(cfg, client.Options{Scheme: admin.Scheme(), Mapper: admin.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

func reachable(g Gomega, h client.Client, cluster string) metav1.Condition {
	drc := &v1alpha1.DRCluster{}
	g.Expect(h.Get(context.Background(), client.ObjectKey{Name: cluster}, drc)).To(Succeed())
	for _, c := range drc.Status.Conditions {
		if c.Type == v1alpha1.ConditionReachable {
			return c
		}
	}
	return metav1.Condition{}
}

// resign returns token with its issue and expiry times changed, signed again with the
// cluster's service-account key: a token the cluster issued that has expired.
func resign(g Gomega, cluster, token string, issued, expires time.Time) string {
	parts := strings.Split(token, ".")
	g.Expect(parts).To(HaveLen(3))
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	g.Expect(err).NotTo(HaveOccurred())
	claims := map[string]any{}
	g.Expect(json.Unmarshal(payload, &claims)).To(Succeed())
	claims["iat"], claims["nbf"], claims["exp"] = issued.Unix(), issued.Unix(), expires.Unix()
	payload, err = json.Marshal(claims)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(c.Dir(), "pki", "sa.key"))
	g.Expect(err).NotTo(HaveOccurred())
	block, _ := pem.Decode(raw)
	g.Expect(block).NotTo(BeNil())
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	signed := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	g.Expect(err).NotTo(HaveOccurred())
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}
