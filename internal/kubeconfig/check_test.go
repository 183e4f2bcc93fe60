package kubeconfig

import (
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestCheckKubeconfigRefusesWhatMakesTheHubActBeyondTheSecretsCredential(t *testing.T) {
	clean := func() *clientcmdapi.Config {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["east"] = &clientcmdapi.Cluster{Server: "https://east:6443", CertificateAuthorityData: []byte("ca")}
		kc.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts["east"] = &clientcmdapi.Context{Cluster: "east", AuthInfo: "hub"}
		kc.CurrentContext = "east"
		return kc
	}
	cases := []struct {
		name   string
		change func(*clientcmdapi.Config)
		want   string
	}{
		{"an exec plugin", func(kc *clientcmdapi.Config) { kc.AuthInfos["hub"].Exec = &clientcmdapi.ExecConfig{Command: "sh"} }, "users[hub].user.exec"},
		{"an auth-provider plugin", func(kc *clientcmdapi.Config) {
			kc.AuthInfos["hub"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, "users[hub].user.auth-provider"},
		{"the hub's own token file", func(kc *clientcmdapi.Config) {
			kc.AuthInfos["hub"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, "users[hub].user.tokenFile"},
		{"a client certificate file", func(kc *clientcmdapi.Config) { kc.AuthInfos["hub"].ClientCertificate = "/etc/c" }, "users[hub].user.client-certificate"},
		{"a client key file", func(kc *clientcmdapi.Config) { kc.AuthInfos["hub"].ClientKey = "/etc/k" }, "users[hub].user.client-key"},
		{"impersonation", func(kc *clientcmdapi.Config) { kc.AuthInfos["hub"].Impersonate = "system:admin" }, "users[hub].user.as"},
		{"a CA file", func(kc *clientcmdapi.Config) { kc.Clusters["east"].CertificateAuthority = "/etc/ca" }, "clusters[east].cluster.certificate-authority"},
		{"insecure TLS", func(kc *clientcmdapi.Config) { kc.Clusters["east"].InsecureSkipTLSVerify = true }, "clusters[east].cluster.insecure-skip-tls-verify"},
		{"a proxy", func(kc *clientcmdapi.Config) { kc.Clusters["east"].ProxyURL = "http://proxy" }, "clusters[east].cluster.proxy-url"},
		{"a plugin in an entry no context uses", func(kc *clientcmdapi.Config) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "sh"}}
		}, "users[other].user.exec"},
	}
	if err := Check(clean()); err != nil {
		t.Fatalf("a kubeconfig as join writes it was refused: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kc := clean()
			tc.change(kc)
			err := Check(kc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal naming %s", err, tc.want)
			}
		})
	}
}
