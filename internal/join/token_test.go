package join_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
)

// revocationWait bounds the wait for a revoked token to be refused: the API server caches a
// token's successful authentication for 10 s.
const revocationWait = 30 * time.Second

// refusedWithin lists VolumeReplicationGroups with token on cluster until the cluster answers
// 401, and returns the last error.
func refusedWithin(t *testing.T, cluster, token string) error {
	t.Helper()
	cl := tokenClient(t, cluster, token)
	var last error
	_ = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, revocationWait, true, func(ctx context.Context) (bool, error) {
		last = cl.List(ctx, &v1alpha1.VolumeReplicationGroupList{})
		return apierrors.IsUnauthorized(last), nil
	})
	return last
}

// Whoever copies the hub's credential for a managed cluster (a backup of the hub's Secrets, a
// log) holds a token that expires, and that unjoin revokes.
func TestTheHubsTokenExpiresAndUnjoinRevokesIt(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.East, lab.East, &out)
	mustJoin(t, o)
	token, claims := hubToken(t, lab.East)
	if left := time.Until(claims.Expires); left <= join.DefaultTokenLifetime-time.Hour || left > join.DefaultTokenLifetime+time.Minute {
		t.Errorf("the hub's token expires at %s, in %s; want in about %s", claims.Expires, left, join.DefaultTokenLifetime)
	}
	if err := tokenClient(t, lab.East, token).List(t.Context(), &v1alpha1.VolumeReplicationGroupList{}); err != nil {
		t.Fatalf("the hub's token may not list VolumeReplicationGroups on east: %v", err)
	}

	if err := join.Unjoin(t.Context(), join.UnjoinOptions{Name: lab.East, Hub: o.Hub, Managed: o.Managed, Out: &out}); err != nil {
		t.Fatalf("unjoin failed: %v\n%s", err, out.String())
	}
	if err := refusedWithin(t, lab.East, token); !apierrors.IsUnauthorized(err) {
		t.Errorf("%s after unjoin, east answers the hub's old token with %v, want 401 Unauthorized", revocationWait, err)
	}
}

// An administrator who suspects the hub's credential leaked revokes every token of it by
// deleting the Secret they are bound to, keeping the identity and its roles; joining again
// issues a new token.
func TestDeletingTheSecretTheTokensAreBoundToRevokesThemAndJoinIssuesAnother(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.West, lab.West, &out)
	mustJoin(t, o)
	leaked, _ := hubToken(t, lab.West)
	if err := adminClient(t, lab.West).Delete(t.Context(), getSecret(t, lab.West, join.TokenSecretName)); err != nil {
		t.Fatal(err)
	}
	if err := refusedWithin(t, lab.West, leaked); !apierrors.IsUnauthorized(err) {
		t.Errorf("%s after Secret %s was deleted, west answers the token bound to it with %v, want 401 Unauthorized", revocationWait, join.TokenSecretName, err)
	}

	out.Reset()
	if err := join.Join(t.Context(), o); err != nil {
		t.Fatalf("the join after the revocation failed: %v\n%s", err, out.String())
	}
	mustContain(t, out.String(), "Secret drover-system/drover-hub-token created", "Secret drover-system/kubeconfig-west configured")
	fresh, claims := hubToken(t, lab.West)
	if fresh == leaked || claims.SecretUID != getSecret(t, lab.West, join.TokenSecretName).UID {
		t.Errorf("the join did not issue a token bound to the new Secret %s", join.TokenSecretName)
	}
	if err := tokenClient(t, lab.West, fresh).List(t.Context(), &v1alpha1.VolumeReplicationGroupList{}); err != nil {
		t.Errorf("the new token may not list VolumeReplicationGroups on west: %v", err)
	}
}

// A cluster joined when the hub's token was a kubernetes.io/service-account-token Secret (a
// token that never expires) is joined again with an expiring token: the old Secret is deleted,
// which revokes its token.
func TestJoiningAgainReplacesANeverExpiringTokenSecret(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.West, lab.West, &out)
	mustJoin(t, o)
	west := adminClient(t, lab.West)
	if err := west.Delete(t.Context(), getSecret(t, lab.West, join.TokenSecretName)); err != nil {
		t.Fatal(err)
	}
	legacy := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: join.DefaultNamespace, Name: join.TokenSecretName,
			Labels:      map[string]string{join.LabelManagedBy: join.ManagedByValue, join.LabelCluster: lab.West},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: join.ServiceAccountName}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if err := west.Create(t.Context(), legacy); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if err := join.Join(t.Context(), o); err != nil {
		t.Fatalf("joining again over a never-expiring token Secret failed: %v\n%s", err, out.String())
	}
	mustContain(t, out.String(), "Secret drover-system/drover-hub-token deleted (a token that never expired", "Secret drover-system/drover-hub-token created")
	if got := getSecret(t, lab.West, join.TokenSecretName); got.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret %s is of type %s, want Opaque", join.TokenSecretName, got.Type)
	}
	if _, claims := hubToken(t, lab.West); claims.Lifetime() != join.DefaultTokenLifetime {
		t.Errorf("the hub's token lives %s, want %s", claims.Lifetime(), join.DefaultTokenLifetime)
	}
}

// The hub's token may request its own successor and no other ServiceAccount's token: a holder
// of it cannot mint the agent's identity, or one in kube-system, on the managed cluster.
func TestTheHubsTokenMayRequestOnlyItsOwnSuccessor(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	token, _ := hubToken(t, lab.East)
	admin := adminClient(t, lab.East)
	for _, sa := range []client.ObjectKey{{Namespace: join.DefaultNamespace, Name: "drover-agent"}, {Namespace: "kube-system", Name: "attack-target"}} {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name}}
		if err := admin.Create(t.Context(), obj); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), obj) })
	}
	hub := tokenClient(t, lab.East, token)
	request := func(namespace, name string) (*authenticationv1.TokenRequest, error) {
		seconds := int64(join.MinTokenLifetime / time.Second)
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		return tr, hub.SubResource("token").Create(t.Context(), sa, tr)
	}
	if tr, err := request(join.DefaultNamespace, join.ServiceAccountName); err != nil || tr.Status.Token == "" {
		t.Errorf("the hub's token may not request its successor: %v", err)
	}
	for _, target := range []client.ObjectKey{
		{Namespace: join.DefaultNamespace, Name: "drover-agent"}, {Namespace: "kube-system", Name: "attack-target"},
		{Namespace: "kube-system", Name: "default"},
	} {
		if _, err := request(target.Namespace, target.Name); !apierrors.IsForbidden(err) {
			t.Errorf("the hub's token requesting a token of %s got %v, want Forbidden", target, err)
		}
	}
}
