package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// DefaultTokenRenewAfter is the fraction of a token's life after which the hub renews it.
const DefaultTokenRenewAfter = 0.8

// Token says where the expiring token of a DRCluster's kubeconfig stands after RenewToken.
type Token struct {
	// Claims are the claims of the token the kubeconfig Secret holds now; zero when it holds
	// no expiring ServiceAccount token (a client certificate, a token that never expires).
	Claims TokenClaims
	// Renewed is set when this call replaced the token.
	Renewed bool
}

// Expiring reports whether the kubeconfig holds an expiring token.
func (t Token) Expiring() bool { return !t.Claims.Expires.IsZero() }

// RenewToken implements Gateway. A kubeconfig whose token is an expiring ServiceAccount token
// (what `drover cluster join` writes) gets a new token once TokenRenewAfter of its life has
// passed: the hub asks the managed cluster's TokenRequest API, with the token it holds, for a
// token of the same ServiceAccount, audiences, lifetime and bound Secret, and writes it into
// the kubeconfig Secret (patched with an optimistic lock). The next probe sees the changed
// Secret and rebuilds the cluster's client. Anything else is left as it is.
func (g *Secrets) RenewToken(ctx context.Context, cluster string, now time.Time) (Token, error) {
	secret, err := g.secret(ctx, cluster)
	if err != nil {
		return Token{}, nil //nolint:nilerr // a missing Secret or DRCluster is the probe's to report
	}
	kc, err := clientcmd.Load(secret.Data[v1alpha1.KubeconfigSecretKey])
	if err != nil {
		return Token{}, nil //nolint:nilerr // an unusable kubeconfig is the probe's to report
	}
	user, raw := kubeconfigToken(kc)
	claims, ok := ParseToken(raw)
	if !ok {
		return Token{}, nil
	}
	current := Token{Claims: claims}
	if g.SecretWriter == nil || now.Before(claims.RenewAt(g.renewAfter())) {
		return current, nil
	}
	rm, err := g.resolve(ctx, cluster)
	if err != nil {
		return current, err
	}
	fresh, err := requestToken(ctx, rm.direct, claims)
	if err != nil {
		return current, fmt.Errorf("failed to renew the hub's token for cluster %s (ServiceAccount %s/%s, expires %s): %w",
			cluster, claims.Namespace, claims.ServiceAccount, claims.Expires.UTC().Format(time.RFC3339), err)
	}
	newClaims, ok := ParseToken(fresh)
	if !ok {
		return current, fmt.Errorf("cluster %s issued a token for ServiceAccount %s/%s that is not an expiring ServiceAccount token", cluster, claims.Namespace, claims.ServiceAccount)
	}
	kc.AuthInfos[user].Token = fresh
	out, err := clientcmd.Write(*kc)
	if err != nil {
		return current, fmt.Errorf("failed to write the kubeconfig of cluster %s: %w", cluster, err)
	}
	before := secret.DeepCopy()
	secret.Data[v1alpha1.KubeconfigSecretKey] = out
	if err := g.SecretWriter.Patch(ctx, secret, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner("drover-hub")); err != nil {
		return current, fmt.Errorf("failed to write the renewed token into Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return Token{Claims: newClaims, Renewed: true}, nil
}

func (g *Secrets) renewAfter() float64 {
	if g.TokenRenewAfter <= 0 || g.TokenRenewAfter > 1 {
		return DefaultTokenRenewAfter
	}
	return g.TokenRenewAfter
}

// requestToken asks the cluster, through cl, for a token like the one whose claims are given:
// same ServiceAccount, audiences, lifetime and bound Secret.
func requestToken(ctx context.Context, cl client.Client, claims TokenClaims) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	seconds := int64(claims.Lifetime() / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: claims.Audiences, ExpirationSeconds: &seconds}}
	if claims.SecretName != "" {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: claims.SecretName, UID: claims.SecretUID}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: claims.Namespace, Name: claims.ServiceAccount}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", err
	}
	if tr.Status.Token == "" {
		return "", errors.New("the TokenRequest returned no token")
	}
	return tr.Status.Token, nil
}
