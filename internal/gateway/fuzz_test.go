package gateway

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// FuzzRESTConfig feeds RESTConfig the kubeconfig a DRCluster's Secret may hold, written by a
// person or a script: it must never panic, a configuration it accepts names a server (client-go
// would otherwise talk to the hub's own host), and its error, which lands in the DRCluster's
// conditions for anyone to read, never repeats the credential.
func FuzzRESTConfig(f *testing.F) {
	f.Add("https://east.example.com:6443", "c2VjcmV0LXRva2VuLXZhbHVl", "")
	f.Add("", "c2VjcmV0LXRva2VuLXZhbHVl", "")
	f.Add("https://10.0.0.1", "abcdefgh12345678", "  bad: [")
	f.Add("http://[::1]:8080", "tok\n  en: x", "clusters: 7\n")
	f.Fuzz(func(t *testing.T, server, token, extra string) {
		raw := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %q
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
users:
- name: u
  user:
    token: %q
%s`, server, token, extra)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "east"},
			Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: []byte(raw)}}
		cfg, err := RESTConfig(secret)
		if err != nil {
			if !strings.Contains(err.Error(), "drover-system/east") {
				t.Fatalf("the error does not name the Secret: %v", err)
			}
			if len(token) >= 8 && strings.Contains(err.Error(), token) {
				t.Fatalf("the error repeats the token: %v", err)
			}
			return
		}
		if cfg.Host == "" {
			t.Fatalf("accepted a kubeconfig without a server: %q", raw)
		}
		if _, err := url.Parse(cfg.Host); err != nil {
			t.Fatalf("accepted server %q, not a URL: %v", cfg.Host, err)
		}
		if cfg.Timeout != requestTimeout {
			t.Fatalf("timeout %v, want %v", cfg.Timeout, requestTimeout)
		}
	})
}
