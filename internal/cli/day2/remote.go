package day2

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/kubeconfig"
)

// remoteTimeout bounds each request of the day-2 verbs to a cluster, so a stopped cluster costs
// a check a few seconds, not the verb.
const remoteTimeout = 5 * time.Second

// managedCluster is a managed cluster as the day-2 verbs (validate, gather, events) reach it:
// with the kubeconfig a person names for it (--cluster-kubeconfig NAME=FILE), else with the
// hub's own credential there, the kubeconfig in its DRCluster's Secret, refused as the hub
// refuses it when it runs a plugin, reads a file, skips TLS verification or impersonates. The
// hub's credential may read only drover's groups (config/rbac/hub-on-managed-cluster), so a
// check or a collection that needs more says so and names the flag.
type managedCluster struct {
	name string
	drc  *v1alpha1.DRCluster
	// via says whose credential reaches the cluster, for the details printed.
	via string
	// hubCredential is true when via is the DRCluster's Secret.
	hubCredential bool
	cfg           *rest.Config
	cl            client.Client
	// err says why the cluster has no client.
	err error
	// down is set when the cluster's API server did not answer this run: nothing more is asked.
	down bool
}

// usable says whether the cluster has a client and answered (or was not probed).
func (m *managedCluster) usable() bool { return m.cl != nil && !m.down }

// ClusterKubeconfigs maps a DRCluster's name to a kubeconfig file of the person running the
// verb, used instead of the hub's credential in the DRCluster's Secret.
type ClusterKubeconfigs map[string]string

// Set parses NAME=FILE, for a repeatable flag.
func (k *ClusterKubeconfigs) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("%q is not NAME=FILE: name the DRCluster and a kubeconfig file of yours for it", v)
	}
	if *k == nil {
		*k = ClusterKubeconfigs{}
	}
	(*k)[name] = file
	return nil
}

// String lists the pairs.
func (k *ClusterKubeconfigs) String() string {
	var out []string
	for name, file := range *k {
		out = append(out, name+"="+file)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Type names the flag's value in help.
func (k *ClusterKubeconfigs) Type() string { return "NAME=FILE" }

// remoteScheme is the scheme of the managed clusters' clients: the built-in types and drover's.
func remoteScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// hubClient is a client of the hub for the day-2 verbs, which read Secrets, Events and
// Deployments besides drover's objects.
func hubClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := remoteScheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = cli.QPS, cli.Burst
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of the hub cluster at %s: %w", cfg.Host, err)
	}
	return cl, nil
}

// managedClusters returns every DRCluster of the hub with a client of it, or the reason it has
// none; sorted by name.
func managedClusters(ctx context.Context, hub client.Reader, files ClusterKubeconfigs) ([]*managedCluster, error) {
	list := &v1alpha1.DRClusterList{}
	if err := hub.List(ctx, list); err != nil {
		return nil, cli.ReadError("DRClusters", err)
	}
	for name := range files {
		if !containsCluster(list.Items, name) {
			return nil, cli.Usage(fmt.Errorf("--cluster-kubeconfig names %s, which is no DRCluster of the hub", name))
		}
		if _, err := fileConfig(files[name]); err != nil {
			return nil, cli.Usage(fmt.Errorf("--cluster-kubeconfig %s=%s: %w", name, files[name], err))
		}
	}
	scheme, err := remoteScheme()
	if err != nil {
		return nil, err
	}
	out := make([]*managedCluster, 0, len(list.Items))
	for i := range list.Items {
		m := &managedCluster{name: list.Items[i].Name, drc: &list.Items[i]}
		if file, ok := files[m.name]; ok {
			m.via = "kubeconfig " + file
			m.cfg, m.err = fileConfig(file)
		} else {
			ref := m.drc.Spec.KubeconfigSecretRef
			m.via, m.hubCredential = fmt.Sprintf("the hub's credential (Secret %s/%s)", ref.Namespace, ref.Name), true
			m.cfg, m.err = secretConfig(ctx, hub, m.name, ref)
		}
		if m.err == nil {
			m.cfg.Timeout = remoteTimeout
			m.cl, m.err = client.New(m.cfg, client.Options{Scheme: scheme})
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func containsCluster(items []v1alpha1.DRCluster, name string) bool {
	for i := range items {
		if items[i].Name == name {
			return true
		}
	}
	return false
}

// fileConfig loads a person's kubeconfig file, with its current context.
func fileConfig(file string) (*rest.Config, error) {
	return kubeconfig.PersonFile(file)
}

// secretConfig builds the hub's configuration of a cluster from its kubeconfig Secret, checked
// as the hub checks it (gateway.RESTConfig), and read only in drover-system: the CLI runs on a
// person's machine, where a plugin in the Secret would run as that person.
func secretConfig(ctx context.Context, hub client.Reader, cluster string, ref v1alpha1.SecretRef) (*rest.Config, error) {
	if err := kubeconfig.SecretRef(cluster, ref, kubeconfig.SecretNamespaces("")); err != nil {
		return nil, fmt.Errorf("%w; or pass --cluster-kubeconfig %s=FILE with a kubeconfig of yours for the cluster", err, cluster)
	}
	secret := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("you may not read Secret %s/%s on the hub: pass --cluster-kubeconfig NAME=FILE with a kubeconfig of yours for the cluster", ref.Namespace, ref.Name)
		}
		return nil, fmt.Errorf("failed to read the kubeconfig Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return gateway.RESTConfig(secret)
}

// serverInfo is what a cluster's API server says about itself.
type serverInfo struct {
	// version is its Kubernetes version (gitVersion).
	version string
	// skew is its clock minus the local clock, judged from its Date header at the midpoint of
	// the request; the header has a resolution of one second.
	skew time.Duration
	// rtt is the round trip of the request.
	rtt time.Duration
}

// probeServer asks the API server for /version, which any authenticated user may read, and
// compares its Date header with the local clock.
func probeServer(ctx context.Context, cfg *rest.Config, now func() time.Time) (serverInfo, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return serverInfo{}, fmt.Errorf("failed to build an HTTP client of %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/version", nil)
	if err != nil {
		return serverInfo{}, err
	}
	sent := now()
	resp, err := hc.Do(req)
	if err != nil {
		return serverInfo{}, cli.Unreachable(fmt.Errorf("%s did not answer: %w", cfg.Host, err))
	}
	defer func() { _ = resp.Body.Close() }()
	got := now()
	info := serverInfo{rtt: got.Sub(sent)}
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("%s answered /version with %s", cfg.Host, resp.Status)
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return info, fmt.Errorf("%s sent no usable Date header: %w", cfg.Host, err)
	}
	// The Date header is truncated to the second: compare it with the midpoint, also truncated.
	mid := sent.Add(info.rtt / 2).Truncate(time.Second)
	info.skew = date.Sub(mid)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err == nil {
		if v, verr := dc.ServerVersion(); verr == nil {
			info.version = v.GitVersion
		}
	}
	return info, nil
}

// servedKinds returns the kinds a cluster serves of the group version, from discovery, which
// any authenticated user may read; an empty set when the group version is not served.
func servedKinds(cfg *rest.Config, gv schema.GroupVersion) (map[string]bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	res, err := dc.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	kinds := map[string]bool{}
	for _, r := range res.APIResources {
		if !strings.Contains(r.Name, "/") {
			kinds[r.Kind] = true
		}
	}
	return kinds, nil
}

// forbidden explains a request the credential may not make.
func (m *managedCluster) forbidden(what string) string {
	hint := ""
	if m.hubCredential {
		hint = fmt.Sprintf("; the hub's credential may read only drover's groups there: pass --cluster-kubeconfig %s=FILE to check", m.name)
	}
	return fmt.Sprintf("%s may not %s on %s%s", m.via, what, m.name, hint)
}
