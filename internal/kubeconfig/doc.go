// Package kubeconfig builds every client configuration drover makes from a kubeconfig. It is
// the only package that calls client-go's kubeconfig builders (clientcmd's
// RESTConfigFromKubeConfig, NewClientConfigFromBytes, NewDefaultClientConfig,
// BuildConfigFromFlags and the deferred loaders); internal/repocheck refuses such a call
// anywhere else, so no kubeconfig reaches a client without passing one of these doors:
//
//   - FromSecret: a kubeconfig read from a Secret (a DRCluster's kubeconfigSecretRef), written
//     by whoever may write Secrets there, never by the reader. Check refuses everything in it
//     that makes the reader act beyond sending the Secret's own credential to the Secret's own
//     server (plugins, files, insecure TLS, a proxy, impersonation); SecretRef refuses a Secret
//     outside the namespaces the hub reads kubeconfig Secrets from. The hub, the CLI on an
//     operator's machine (join, rotate-store-key, validate) and the tests all read such a
//     Secret through it.
//   - Person: the kubeconfig of the person running the CLI (--kubeconfig, $KUBECONFIG,
//     ~/.kube/config), loaded as kubectl loads it: the person's own file, whose plugins are the
//     person's own, so nothing is refused.
//   - FromFile: a file a process was given by whoever started it (drover hub or agent
//     --kubeconfig, the lab's own kubeconfigs), trusted as that person's.
package kubeconfig
