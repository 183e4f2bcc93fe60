package hub_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// fenceCertSecret is the fence's serving certificate and key in drover-system, as the release
// manifests name it (dist/drover-agent.yaml, `drover agent --webhook-cert-secret`).
const fenceCertSecret = "drover-fence-cert"

// Whoever holds the hub's credential for a managed cluster (the token in the DRCluster's
// kubeconfig Secret: the hub cluster's administrators, anyone who may read the hub's
// drover-system Secrets) reads, lists and writes no Secret of the managed cluster's
// drover-system either: not the S3 profiles' Secrets (the store's credentials and the keys
// that seal every store object), not the fence's certificate and key. The hub process needs
// none of them, and the CLI verbs that copy and rotate the profiles reach each cluster with a
// kubeconfig of the operator's. A patch answers with the whole object, so a patch allowed
// without a get would still be a read: each is tried.
func TestTheHubsCredentialReadsNoSecretOfDroverSystem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, asHubCore := hubCredential(g, lab.East)
	eastAdmin, err := testLab.Client(lab.East, clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	profile := client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: profiles[0].Name}
	g.Expect(eastAdmin.Get(ctx, profile, &corev1.Secret{})).To(Succeed(), "east holds S3 profile Secret %s", profile)
	fence := ensureFenceCertificate(ctx, g, t, eastAdmin)

	// Every request is made and printed first, then judged: what the credential read is shown
	// whole.
	type try struct {
		verb, what string
		err        error
		data       map[string][]byte
	}
	var tries []try
	for _, key := range []client.ObjectKey{profile, fence} {
		got := &corev1.Secret{}
		err := asHubCore.Get(ctx, key, got)
		t.Logf("get Secret %s with the hub's credential: %s", key, attempt(err, got))
		tries = append(tries, try{"get", key.String(), err, got.Data})

		patched := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		err = asHubCore.Patch(ctx, patched, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"read-by":"drover-hub"}}}`)))
		t.Logf("patch Secret %s with the hub's credential: %s", key, attempt(err, patched))
		tries = append(tries, try{"patch", key.String(), err, patched.Data})
	}
	list := &corev1.SecretList{}
	err = asHubCore.List(ctx, list, client.InNamespace(lab.S3SecretNamespace))
	t.Logf("list the Secrets of %s with the hub's credential: %v (%d listed)", lab.S3SecretNamespace, err, len(list.Items))
	tries = append(tries, try{"list", lab.S3SecretNamespace, err, nil})
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: lab.S3SecretNamespace, Name: "s3-planted",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "drover", "drover.io/cluster": lab.East}}}
	err = asHubCore.Create(ctx, planted)
	t.Logf("create a Secret labelled as join's in %s with the hub's credential: %v", lab.S3SecretNamespace, err)
	if err == nil {
		_ = eastAdmin.Delete(ctx, planted)
	}
	tries = append(tries, try{"create", lab.S3SecretNamespace, err, nil})

	for _, tr := range tries {
		g.Expect(apierrors.IsForbidden(tr.err)).To(BeTrue(), "the hub's credential may %s Secret(s) %s: %v", tr.verb, tr.what, tr.err)
		g.Expect(tr.err).To(MatchError(ContainSubstring(fmt.Sprintf("cannot %s resource \"secrets\"", tr.verb))), "refused by RBAC, no rule granting it")
		g.Expect(tr.data).To(BeEmpty(), "the hub's credential read Secret %s (%s)", tr.what, tr.verb)
	}
	theAdmissionPolicyRefusesTheHubAnySecretWrite(ctx, g, t, eastAdmin, asHubCore)
}

// theAdmissionPolicyRefusesTheHubAnySecretWrite grants the hub's ServiceAccount, for a moment,
// the right to create Secrets in drover-system (as a role aggregated or bound by mistake
// would): the admission policy drover-hub-on-managed-cluster still refuses it every Secret.
func theAdmissionPolicyRefusesTheHubAnySecretWrite(ctx context.Context, g Gomega, t *testing.T, admin, asHubCore client.Client) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: "hub-secrets-by-mistake"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: lab.DroverNamespace, Name: "drover-hub"}}}
	for _, o := range []client.Object{role, binding} {
		g.Expect(admin.Create(ctx, o)).To(Succeed())
		defer func() { _ = admin.Delete(context.Background(), o) }()
	}
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: "s3-planted",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "drover", "drover.io/cluster": lab.East}}}
	var err error
	g.Eventually(func() string {
		err = asHubCore.Create(ctx, planted.DeepCopy(), client.DryRunAll)
		return fmt.Sprint(err)
	}).WithTimeout(30*time.Second).ShouldNot(ContainSubstring(`cannot create resource "secrets"`), "RBAC lets the hub create Secrets once bound")
	t.Logf("create a Secret with the hub's credential, RBAC granting it: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("the hub's credential writes no Secret on a managed cluster")))
}

// ensureFenceCertificate returns the fence's certificate Secret on the cluster, creating a
// stand-in of it (what the agent's certificate rotation writes) when the suite's agent, which
// runs in-process without the release manifests, made none; the stand-in is deleted at the
// test's end.
func ensureFenceCertificate(ctx context.Context, g Gomega, t *testing.T, admin client.Client) client.ObjectKey {
	key := client.ObjectKey{Namespace: lab.DroverNamespace, Name: fenceCertSecret}
	err := admin.Get(ctx, key, &corev1.Secret{})
	if err == nil {
		return key
	}
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get Secret %s: %v", key, err)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("the fence's certificate"), corev1.TLSPrivateKeyKey: []byte("the fence's private key")}}
	g.Expect(admin.Create(ctx, s)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), s) })
	return key
}

// attempt says what a request with the hub's credential got: the error, or the keys and sizes
// of the Secret it read.
func attempt(err error, s *corev1.Secret) string {
	if err != nil {
		return err.Error()
	}
	sizes := map[string]int{}
	for k, v := range s.Data {
		sizes[k] = len(v)
	}
	return fmt.Sprintf("READ %d keys %v (bytes per key %v)", len(s.Data), slices.Sorted(maps.Keys(s.Data)), sizes)
}
