package gateway

import (
	"encoding/base64"
	"testing"
	"time"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("signature"))
}

func TestParseTokenReadsOnlyExpiringServiceAccountTokens(t *testing.T) {
	bound := jwt(`{"aud":["https://127.0.0.1:6443"],"iat":1000,"exp":29800,"kubernetes.io":{"namespace":"drover-system",` +
		`"secret":{"name":"drover-hub-token","uid":"s-1"},"serviceaccount":{"name":"drover-hub","uid":"sa-1"}}}`)
	c, ok := ParseToken(bound)
	if !ok {
		t.Fatal("a TokenRequest token bound to a Secret was not read")
	}
	want := TokenClaims{IssuedAt: time.Unix(1000, 0), Expires: time.Unix(29800, 0), Audiences: []string{"https://127.0.0.1:6443"},
		Namespace: "drover-system", ServiceAccount: "drover-hub", ServiceAccountUID: "sa-1", SecretName: "drover-hub-token", SecretUID: "s-1"}
	if c.IssuedAt != want.IssuedAt || c.Expires != want.Expires || c.Namespace != want.Namespace || c.ServiceAccount != want.ServiceAccount ||
		c.ServiceAccountUID != want.ServiceAccountUID || c.SecretName != want.SecretName || c.SecretUID != want.SecretUID ||
		len(c.Audiences) != 1 || c.Audiences[0] != want.Audiences[0] {
		t.Errorf("claims = %+v, want %+v", c, want)
	}
	if got := c.RenewAt(0.8); !got.Equal(time.Unix(1000+23040, 0)) {
		t.Errorf("RenewAt(0.8) = %s, want 80 %% into the 8-hour life", got)
	}
	for name, token := range map[string]string{
		"a Secret's legacy token (no expiry)": jwt(`{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"drover-system"}`),
		"a token of another issuer":           jwt(`{"iat":1000,"exp":2000,"sub":"someone"}`),
		"not a JWT":                           "abcdef",
		"a payload that is not JSON":          "a.b.c",
		"an expiry before the issue":          jwt(`{"iat":2000,"exp":1000,"kubernetes.io":{"namespace":"n","serviceaccount":{"name":"s"}}}`),
	} {
		if _, ok := ParseToken(token); ok {
			t.Errorf("%s was read as an expiring ServiceAccount token", name)
		}
	}
}
