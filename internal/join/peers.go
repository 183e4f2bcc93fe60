package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The S3 profiles' Secrets on the clusters joined before (join's copies of a new profile, the
// rotations' rewrites) are written with a kubeconfig of the operator's for each cluster, never
// with the hub's credential there: that credential has no right on Secrets
// (config/rbac/hub-on-managed-cluster), so whoever holds it (the hub cluster's administrators,
// whoever may read the hub's kubeconfig Secrets) reads neither the profiles' credentials and
// store keys nor the fence's certificate on any managed cluster. The CLI never reads the hub's
// kubeconfig Secrets for these verbs either.

// Flags that give the kubeconfigs of the clusters, named in messages: join's, for the clusters
// joined before; the rotations', for every joined cluster.
const (
	PeerKubeconfigFlag    = "--peer-kubeconfig"
	ClusterKubeconfigFlag = "--cluster-kubeconfig"
)

// LoadKubeconfigs loads, for each DRCluster name, the kubeconfig file a person named for it
// (NAME=FILE), with its current context, through LoadKubeconfig: the person's own file, as join's
// --cluster-kubeconfig.
func LoadKubeconfigs(files map[string]string, flag string) (map[string]Cluster, error) {
	out := make(map[string]Cluster, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		c, err := LoadKubeconfig(files[name], "")
		if err != nil {
			return nil, fmt.Errorf("%s %s=%s: %w", flag, name, files[name], err)
		}
		out[name] = c
	}
	return out, nil
}

// insecurePeers names each kubeconfig of clusters that skips TLS verification, unless allowed:
// the S3 credentials and store keys written there would cross that connection.
func insecurePeers(clusters map[string]Cluster, flag string, allowed bool) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		if c := clusters[name]; c.Config != nil && c.Config.Insecure && !allowed {
			problems = append(problems, fmt.Sprintf("%s (%s %s=FILE) sets insecure-skip-tls-verify: anyone on the path could read the S3 credentials and store keys written there; "+
				"give it the cluster's CA (certificate-authority-data), or pass --allow-insecure-kubeconfig", c.Source, flag, name))
		}
	}
	return problems
}

// missingKubeconfigs refuses, before anything is written, when a cluster of names has no
// kubeconfig in given, naming each and the flag; why says what the kubeconfigs are for. It
// notes in out the kubeconfigs given for no cluster of names.
func missingKubeconfigs(out io.Writer, names []string, given map[string]Cluster, flag, why string) error {
	var missing []string
	for _, n := range names {
		if _, ok := given[n]; !ok {
			missing = append(missing, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(given)) {
		if !slices.Contains(names, n) {
			fmt.Fprintf(out, "note: %s names %s, which is no cluster this command writes to: not used\n", flag, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var pass []string
	for _, n := range missing {
		pass = append(pass, fmt.Sprintf("%s %s=FILE", flag, n))
	}
	return fmt.Errorf("no kubeconfig for joined cluster(s) %s: %s, with a kubeconfig of yours for each (the hub's credential there may not read or write Secrets); "+
		"pass %s, whose user may get, create and patch Secrets in drover-system there, or unjoin a cluster that is gone for good (`drover cluster unjoin NAME`)",
		strings.Join(missing, ", "), why, strings.Join(pass, " "))
}

// peerTarget is the joined cluster name as the operator reaches it: with the kubeconfig given
// for it, refused when it skips TLS verification (the profiles' credentials and store keys
// cross that connection) unless allowInsecure, and only once the cluster it reaches says it is
// name (joinedAs): a kubeconfig of another cluster given by mistake would otherwise leave name
// without the copy, or a rotation would make a key current that name's agent lacks.
func peerTarget(ctx context.Context, name string, c Cluster, namespace, flag string, allowInsecure bool) (*target, error) {
	if problems := insecurePeers(map[string]Cluster{name: c}, flag, allowInsecure); len(problems) > 0 {
		return nil, errors.New(problems[0])
	}
	t, err := newTarget("managed cluster "+name, c)
	if err != nil {
		return nil, err
	}
	as, how, err := joinedAs(ctx, t, namespace)
	if err != nil {
		return nil, err
	}
	if as != name {
		return nil, fmt.Errorf("%s, given for cluster %s (%s %s=FILE), reaches the cluster at %s, which %s: give the kubeconfig of %s",
			c.Source, name, flag, name, t.host, how, name)
	}
	return t, nil
}

// joinedAs says which DRCluster the cluster t reaches is, and how it knows: the label
// drover.io/cluster of the ClusterRoleBinding that join made for the hub's identity, else the
// cluster name the agent's ConfigMap gives (join writes it too). It returns "" when neither
// names one.
func joinedAs(ctx context.Context, t *target, namespace string) (name, how string, err error) {
	crb := &rbacv1.ClusterRoleBinding{}
	err = t.cl.Get(ctx, client.ObjectKey{Name: hubRoleBindingName}, crb)
	switch {
	case err == nil && crb.Labels[LabelCluster] != "":
		return crb.Labels[LabelCluster], fmt.Sprintf("is joined as %s (ClusterRoleBinding %s)", crb.Labels[LabelCluster], hubRoleBindingName), nil
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return "", "", fmt.Errorf("failed to get ClusterRoleBinding %s on %s: %w", hubRoleBindingName, t.role, t.explain(err))
	}
	cm := &corev1.ConfigMap{}
	err = t.cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: AgentConfigMapName}, cm)
	switch {
	case err == nil && cm.Data[AgentClusterNameKey] != "":
		return cm.Data[AgentClusterNameKey], fmt.Sprintf("its agent calls %s (ConfigMap %s/%s)", cm.Data[AgentClusterNameKey], namespace, AgentConfigMapName), nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", "", fmt.Errorf("failed to get ConfigMap %s/%s on %s: %w", namespace, AgentConfigMapName, t.role, t.explain(err))
	}
	return "", fmt.Sprintf("is no joined cluster (neither ClusterRoleBinding %s labelled %s nor ConfigMap %s/%s naming it)",
		hubRoleBindingName, LabelCluster, namespace, AgentConfigMapName), nil
}
