package join

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

// The hub's credential on a managed cluster is a token of the TokenRequest API: it expires
// after o.TokenLifetime and the hub renews it (gateway.Secrets.RenewToken) with the token it
// holds, which the Role of config/rbac/hub-on-managed-cluster allows for its own
// ServiceAccount only. It is bound to the Secret TokenSecretName, not only to the
// ServiceAccount: the API server refuses a bound token once its object is gone, so
// `kubectl delete secret drover-hub-token` revokes every token of the hub at once while
// keeping its identity and roles, and `unjoin` (which deletes the Secret and the
// ServiceAccount) revokes them too. Binding to a Secret also keeps the token from outliving
// the join that made it: a join after the Secret was deleted makes a new one.

// caConfigMap is the ConfigMap kube-controller-manager publishes in every namespace with the
// cluster's CA.
const caConfigMap = "kube-root-ca.crt"

// hubToken returns the token for the hub's kubeconfig and the CA the kubeconfig trusts. It
// keeps the token the hub holds when that one is still what join would issue (the hub's
// ServiceAccount and bound Secret, the lifetime asked for, less than 80 % of its life gone)
// and the cluster accepts it, so that joining again changes nothing; else it requests one.
func (o Options) hubToken(ctx context.Context, hub, managed *target) (string, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.TokenTimeout)
	defer cancel()
	token, err := o.obtainToken(ctx, hub, managed)
	if err != nil {
		return "", nil, fmt.Errorf("failed to obtain a token for ServiceAccount %s/%s on %s within %s (--token-timeout): %w",
			o.Namespace, ServiceAccountName, managed.role, o.TokenTimeout, managed.explain(err))
	}
	ca, err := o.managedCA(ctx, managed)
	return token, ca, err
}

func (o Options) obtainToken(ctx context.Context, hub, managed *target) (string, error) {
	sa := &corev1.ServiceAccount{}
	if err := managed.cl.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: ServiceAccountName}, sa); err != nil {
		return "", err
	}
	binding := &corev1.Secret{}
	if err := managed.cl.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: TokenSecretName}, binding); err != nil {
		return "", err
	}
	if token := o.currentToken(ctx, hub, sa, binding); token != "" {
		return token, nil
	}
	seconds := int64(o.TokenLifetime / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: binding.Name, UID: binding.UID},
	}}
	if err := managed.cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", err
	}
	if tr.Status.Token == "" {
		return "", errors.New("the TokenRequest returned no token")
	}
	return tr.Status.Token, nil
}

// currentToken returns the token of the hub's kubeconfig Secret for o.Name when join would
// keep it, else "".
func (o Options) currentToken(ctx context.Context, hub *target, sa *corev1.ServiceAccount, binding *corev1.Secret) string {
	secret := &corev1.Secret{}
	if err := hub.cl.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: KubeconfigSecretName(o.Name)}, secret); err != nil {
		return ""
	}
	kc, err := clientcmd.Load(secret.Data[v1alpha1.KubeconfigSecretKey])
	if err != nil {
		return ""
	}
	cluster, ok := kc.Clusters[o.Name]
	auth, ok2 := kc.AuthInfos[ServiceAccountName]
	if !ok || !ok2 || cluster.Server != o.Server {
		return ""
	}
	claims, ok := gateway.ParseToken(auth.Token)
	switch {
	case !ok, claims.Namespace != sa.Namespace, claims.ServiceAccount != sa.Name, claims.ServiceAccountUID != sa.UID,
		claims.SecretName != binding.Name, claims.SecretUID != binding.UID, claims.Lifetime() != o.TokenLifetime,
		!time.Now().Before(claims.RenewAt(gateway.DefaultTokenRenewAfter)):
		return ""
	}
	if err := o.checkToken(ctx, auth.Token); err != nil {
		return ""
	}
	return auth.Token
}

// checkToken asks the managed cluster who the token is: it must be the hub's ServiceAccount.
func (o Options) checkToken(ctx context.Context, token string) error {
	cfg := rest.AnonymousClientConfig(o.Managed.Config)
	cfg.BearerToken = token
	cfg.Timeout = requestTimeout
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := cl.Create(ctx, review); err != nil {
		return err
	}
	if want := "system:serviceaccount:" + o.Namespace + ":" + ServiceAccountName; review.Status.UserInfo.Username != want {
		return fmt.Errorf("the token is %q's, not %s", review.Status.UserInfo.Username, want)
	}
	return nil
}

// managedCA is the CA the hub's kubeconfig trusts: the one the managed cluster's kubeconfig
// trusts, else the one the cluster publishes in the ConfigMap kube-root-ca.crt (read over
// the connection --allow-insecure-kubeconfig accepted), waited for until ctx ends.
func (o Options) managedCA(ctx context.Context, managed *target) ([]byte, error) {
	ca, err := configCA(o.Managed.Config)
	if err != nil || len(ca) > 0 {
		return ca, err
	}
	key := client.ObjectKey{Namespace: o.Namespace, Name: caConfigMap}
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if lastErr = managed.cl.Get(ctx, key, cm); lastErr != nil {
			return false, nil //nolint:nilerr // retried until the timeout, then reported
		}
		ca = []byte(cm.Data["ca.crt"])
		return len(ca) > 0, nil
	})
	if err != nil {
		msg := fmt.Sprintf("the managed cluster's kubeconfig names no CA and ConfigMap %s on %s holds none within %s: give --cluster-kubeconfig the cluster's CA (certificate-authority-data), or check that kube-controller-manager publishes it (--root-ca-file)",
			key, managed.role, o.TokenTimeout)
		if lastErr != nil && !apierrors.IsNotFound(lastErr) {
			return nil, fmt.Errorf("%s (last error: %w)", msg, managed.explain(lastErr))
		}
		return nil, errors.New(msg)
	}
	return ca, nil
}

// replaceLegacyToken deletes a kubernetes.io/service-account-token Secret drover-hub-token that
// an earlier join made (a token that never expires): deleting it revokes that token, and the
// Secret the new tokens are bound to takes its name (a Secret's type cannot change).
func replaceLegacyToken(ctx context.Context, o Options, managed *target) error {
	secret := &corev1.Secret{}
	err := managed.cl.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: TokenSecretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get Secret %s/%s on %s: %w", o.Namespace, TokenSecretName, managed.role, managed.explain(err))
	case secret.Type != corev1.SecretTypeServiceAccountToken || secret.Labels[LabelCluster] != o.Name:
		return nil
	}
	if err := managed.cl.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete the never-expiring token Secret %s/%s on %s: %w", o.Namespace, TokenSecretName, managed.role, managed.explain(err))
	}
	fmt.Fprintf(o.Out, "%s: Secret %s/%s deleted (a token that never expired; replaced by an expiring one)\n", managed.role, o.Namespace, TokenSecretName)
	return nil
}
