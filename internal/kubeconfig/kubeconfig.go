package kubeconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-io/drover/api/v1alpha1"
)

// DefaultSecretNamespace is where kubeconfig Secrets are read from, besides the hub's own
// namespace: where `drover cluster join` writes them.
const DefaultSecretNamespace = "drover-system"

// ErrSecretNamespace wraps the refusal of a kubeconfig Secret outside SecretNamespaces.
var ErrSecretNamespace = errors.New("kubeconfig Secret outside the hub's namespaces")

// SecretNamespaces are the namespaces kubeconfig Secrets may be read from: DefaultSecretNamespace
// and hubNamespace (empty: none more). A DRCluster naming a Secret elsewhere would let whoever
// writes Secrets there, or a DRCluster's author, hand the reader any credential, or read any
// Secret's kubeconfig key through the reader.
func SecretNamespaces(hubNamespace string) []string {
	namespaces := []string{DefaultSecretNamespace}
	if hubNamespace != "" && hubNamespace != DefaultSecretNamespace {
		namespaces = append(namespaces, hubNamespace)
	}
	return namespaces
}

// SecretRef refuses the kubeconfig Secret of DRCluster cluster when it is not in one of
// namespaces (SecretNamespaces), saying what to do.
func SecretRef(cluster string, ref v1alpha1.SecretRef, namespaces []string) error {
	if slices.Contains(namespaces, ref.Namespace) {
		return nil
	}
	return fmt.Errorf("%w: the Secret %s/%s of DRCluster %s is not in %s: kubeconfig Secrets are read only there; move the Secret and set spec.kubeconfigSecretRef.namespace",
		ErrSecretNamespace, ref.Namespace, ref.Name, cluster, strings.Join(namespaces, " or "))
}

// FromSecret builds the configuration of a cluster from the kubeconfig in secret's key
// v1alpha1.KubeconfigSecretKey, refusing one that Check refuses: a plugin, a file, insecure
// TLS, a proxy or impersonation. It sets no timeout and no rate limits.
func FromSecret(secret *corev1.Secret) (*rest.Config, error) {
	raw, ok := secret.Data[v1alpha1.KubeconfigSecretKey]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no key %q: put the cluster's kubeconfig there", secret.Namespace, secret.Name, v1alpha1.KubeconfigSecretKey)
	}
	kc, err := clientcmd.Load(raw)
	if err == nil {
		err = Check(kc)
	}
	var cfg *rest.Config
	if err == nil {
		cfg, err = clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s key %q is not a usable kubeconfig: %w", secret.Namespace, secret.Name, v1alpha1.KubeconfigSecretKey, err)
	}
	return cfg, nil
}

// Person loads the kubeconfig of the person running the CLI as kubectl does: path, else
// $KUBECONFIG, else ~/.kube/config, with overrides (a context, a namespace). Nothing is
// refused: the file is the person's own.
func Person(path string, overrides *clientcmd.ConfigOverrides) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	if overrides == nil {
		overrides = &clientcmd.ConfigOverrides{}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// PersonFile loads the one kubeconfig file a person named (no $KUBECONFIG, no
// ~/.kube/config), with its current context. Nothing is refused: the file is the person's own.
func PersonFile(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// FromFile builds the configuration of the kubeconfig file a process was given by whoever
// started it (drover hub or agent --kubeconfig, the lab's own files). Nothing is refused.
func FromFile(path string) (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", path)
}
