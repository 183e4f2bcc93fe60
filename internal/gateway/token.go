package gateway

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenClaims is what the hub reads from the ServiceAccount token of a DRCluster's kubeconfig:
// when it was issued and expires, for whom, and the object it is bound to. The hub does not
// verify the token's signature (the managed cluster does); it reads the claims only to know
// when to renew the token and what to ask for.
type TokenClaims struct {
	IssuedAt, Expires time.Time
	Audiences         []string
	// Namespace and ServiceAccount name the token's ServiceAccount.
	Namespace, ServiceAccount string
	// ServiceAccountUID is the UID of the ServiceAccount the token was issued for.
	ServiceAccountUID types.UID
	// SecretName and SecretUID name the Secret the token is bound to; empty when it is not.
	SecretName string
	SecretUID  types.UID
}

// Lifetime is how long the token was issued for.
func (c TokenClaims) Lifetime() time.Duration { return c.Expires.Sub(c.IssuedAt) }

// RenewAt is when a fraction of the token's life has passed: the hub renews the token from
// then on.
func (c TokenClaims) RenewAt(fraction float64) time.Time {
	return c.IssuedAt.Add(time.Duration(fraction * float64(c.Lifetime())))
}

// jwtClaims are the claims of a Kubernetes ServiceAccount token (a JWT) the hub reads.
type jwtClaims struct {
	IssuedAt   int64           `json:"iat"`
	Expires    int64           `json:"exp"`
	Audience   json.RawMessage `json:"aud"`
	Kubernetes *struct {
		Namespace      string       `json:"namespace"`
		ServiceAccount *objectClaim `json:"serviceaccount"`
		Secret         *objectClaim `json:"secret"`
	} `json:"kubernetes.io"`
}

type objectClaim struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// ParseToken reads the claims of a ServiceAccount token that expires (one the TokenRequest API
// issued). ok is false for anything else: a token of a kubernetes.io/service-account-token
// Secret (no expiry), a token of another issuer, or not a JWT.
func ParseToken(token string) (claims TokenClaims, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return TokenClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return TokenClaims{}, false
	}
	var c jwtClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.Kubernetes == nil || c.Kubernetes.ServiceAccount == nil ||
		c.Expires <= c.IssuedAt || c.IssuedAt <= 0 {
		return TokenClaims{}, false
	}
	claims = TokenClaims{
		IssuedAt: time.Unix(c.IssuedAt, 0), Expires: time.Unix(c.Expires, 0),
		Namespace: c.Kubernetes.Namespace, ServiceAccount: c.Kubernetes.ServiceAccount.Name, ServiceAccountUID: c.Kubernetes.ServiceAccount.UID,
	}
	if c.Kubernetes.Secret != nil {
		claims.SecretName, claims.SecretUID = c.Kubernetes.Secret.Name, c.Kubernetes.Secret.UID
	}
	// "aud" is a string or a list of strings.
	var one string
	if json.Unmarshal(c.Audience, &one) == nil {
		claims.Audiences = []string{one}
	} else {
		_ = json.Unmarshal(c.Audience, &claims.Audiences)
	}
	if claims.Namespace == "" || claims.ServiceAccount == "" {
		return TokenClaims{}, false
	}
	return claims, true
}

// kubeconfigToken returns the user of the kubeconfig's current context and its token.
func kubeconfigToken(kc *clientcmdapi.Config) (user, token string) {
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return "", ""
	}
	auth, ok := kc.AuthInfos[ctx.AuthInfo]
	if !ok {
		return "", ""
	}
	return ctx.AuthInfo, auth.Token
}
