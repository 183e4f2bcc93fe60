package hub_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// Whoever holds the hub's credential for a managed cluster (the token in the DRCluster's
// kubeconfig Secret) reads no Secret of an application, nor of kube-system, whatever its name,
// and lists none: the hub needs none there, since the VolSync keys travel sealed through the
// stores between the agents. drover-system's Secrets are refused to it too
// (TestTheHubsCredentialReadsNoSecretOfDroverSystem).
func TestTheHubsCredentialReadsNoApplicationsSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, asHubCore := hubCredential(g, lab.East)
	eastAdmin, err := testLab.Client(lab.East, clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "hub-credential-reads"
	g.Expect(client.IgnoreAlreadyExists(eastAdmin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	appSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-password"}, Data: map[string][]byte{"password": []byte("the-apps-own")}}
	systemSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "hub-credential-bait"}, Data: map[string][]byte{"token": []byte("kube-system's")}}
	for _, s := range []*corev1.Secret{appSecret, systemSecret} {
		g.Expect(client.IgnoreAlreadyExists(eastAdmin.Create(ctx, s.DeepCopy()))).To(Succeed())
		defer func() { _ = eastAdmin.Delete(ctx, s) }()
	}

	for _, s := range []*corev1.Secret{appSecret, systemSecret} {
		got := &corev1.Secret{}
		err := asHubCore.Get(ctx, client.ObjectKeyFromObject(s), got)
		t.Logf("the hub's credential reads Secret %s/%s: %v (data read: %q)", s.Namespace, s.Name, err, got.Data)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the hub's credential read Secret %s/%s: %v", s.Namespace, s.Name, err)
		g.Expect(got.Data).To(BeEmpty())
	}
	for _, in := range []string{ns, "kube-system", lab.DroverNamespace} {
		err := asHubCore.List(ctx, &corev1.SecretList{}, client.InNamespace(in))
		t.Logf("the hub's credential lists the Secrets of %s: %v", in, err)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the hub's credential listed the Secrets of %s: %v", in, err)
	}
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-db-0-volsync-key",
		Labels: map[string]string{"drover.io/vrg-name": "db", "drover.io/vrg-namespace": ns}}, Data: map[string][]byte{"psk.txt": []byte("volsync:planted")}}
	err = asHubCore.Create(ctx, planted)
	t.Logf("the hub's credential creates a VolSync key Secret in %s: %v", ns, err)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the hub's credential wrote a Secret in an application's namespace: %v", err)

}
