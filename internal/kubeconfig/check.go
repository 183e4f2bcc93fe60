package kubeconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A kubeconfig Secret is written by whoever may write Secrets in the hub's namespace, and read
// with the reader's own privileges: by the hub, and by the CLI on an operator's machine (join,
// rotate-store-key, validate). Everything in a kubeconfig that makes the reader act beyond
// sending the Secret's own credential to the Secret's own server is refused:
//   - exec and auth-provider plugins run a command, or an identity provider's flow, as the
//     reader: in the hub's pod, or as the operator on their workstation;
//   - file references (tokenFile, client-certificate, client-key, certificate-authority) read
//     the reader's files: `tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token` with a
//     server of the writer's sends the hub's own ServiceAccount token to it, and
//     `client-key: ~/.kube/admin.key` an operator's key;
//   - insecure-skip-tls-verify lets anyone on the path read the credential;
//   - proxy-url sends every request, and its credential, through a host of the writer's;
//   - impersonation (as, as-groups, as-uid, as-user-extra) asks the cluster for another
//     identity than the credential's.
//
// A kubeconfig that `drover cluster join` writes holds a token and the cluster's CA as data.

// ErrUnsafe wraps every refusal of Check.
var ErrUnsafe = errors.New("unsafe kubeconfig")

// Check refuses a kubeconfig that uses a plugin, a file, insecure TLS, a proxy or
// impersonation, in any of its clusters or users, naming each field found.
func Check(cfg *clientcmdapi.Config) error {
	var found []string
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		field := func(f string) string { return fmt.Sprintf("clusters[%s].cluster.%s", name, f) }
		if c.CertificateAuthority != "" {
			found = append(found, field("certificate-authority (a file: put the CA in certificate-authority-data)"))
		}
		if c.InsecureSkipTLSVerify {
			found = append(found, field("insecure-skip-tls-verify (set certificate-authority-data to the cluster's CA)"))
		}
		if c.ProxyURL != "" {
			found = append(found, field("proxy-url"))
		}
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		field := func(f string) string { return fmt.Sprintf("users[%s].user.%s", name, f) }
		checks := []struct {
			set  bool
			name string
		}{
			{u.Exec != nil, "exec (a plugin the reader would run)"},
			{u.AuthProvider != nil, "auth-provider (a plugin the reader would run)"},
			{u.TokenFile != "", "tokenFile (a file of the reader's: put the token in token)"},
			{u.ClientCertificate != "", "client-certificate (a file of the reader's: use client-certificate-data)"},
			{u.ClientKey != "", "client-key (a file of the reader's: use client-key-data)"},
			{u.Impersonate != "" || len(u.ImpersonateGroups) > 0 || u.ImpersonateUID != "" || len(u.ImpersonateUserExtra) > 0,
				"as, as-groups, as-uid or as-user-extra (impersonation)"},
		}
		for _, c := range checks {
			if c.set {
				found = append(found, field(c.name))
			}
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: it sets %s; remove them: a DRCluster's kubeconfig holds a token or a client certificate as data, "+
			"the cluster's CA as certificate-authority-data and nothing else, as `drover cluster join` writes it",
			ErrUnsafe, strings.Join(found, ", "))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
