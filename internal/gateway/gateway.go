// Package gateway is how the hub reaches the managed clusters: a client per DRCluster, built
// from the kubeconfig in the Secret the DRCluster names, and a health probe. The hub never holds
// a client of a managed cluster any other way.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// ErrNoKubeconfig wraps every error that says a DRCluster's kubeconfig Secret is missing or
// unusable: a person must fix it, retrying does not help.
var ErrNoKubeconfig = errors.New("no usable kubeconfig")

// Gateway gives the hub a client of each managed cluster.
type Gateway interface {
	// Client returns a client of the named DRCluster. An error wrapping ErrNoKubeconfig says the
	// cluster's Secret must be fixed; other errors are transient.
	Client(ctx context.Context, cluster string) (client.Client, error)
}

// requestTimeout bounds every request to a managed cluster, so a lost cluster costs a reconcile
// a few seconds at most.
const requestTimeout = 5 * time.Second

// Secrets is the production Gateway: it reads each DRCluster and its kubeconfig Secret from the
// hub and caches one client per cluster until the Secret changes.
type Secrets struct {
	// Hub reads DRClusters and Secrets on the hub. An uncached reader keeps the hub from
	// watching every Secret of the cluster.
	Hub client.Reader
	// Scheme is the scheme of the managed-cluster clients.
	Scheme *runtime.Scheme

	mu      sync.Mutex
	clients map[string]cachedClient
}

var _ Gateway = (*Secrets)(nil)

type cachedClient struct {
	// version identifies the Secret the client was built from.
	version types.UID
	rv      string
	client  client.Client
}

// Client implements Gateway.
func (g *Secrets) Client(ctx context.Context, cluster string) (client.Client, error) {
	drc := &v1alpha1.DRCluster{}
	if err := g.Hub.Get(ctx, client.ObjectKey{Name: cluster}, drc); err != nil {
		return nil, fmt.Errorf("failed to get DRCluster %s: %w", cluster, err)
	}
	ref := drc.Spec.KubeconfigSecretRef
	secret := &corev1.Secret{}
	if err := g.Hub.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("%w for DRCluster %s: failed to get Secret %s/%s: %w", ErrNoKubeconfig, cluster, ref.Namespace, ref.Name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.clients[cluster]; ok && c.version == secret.UID && c.rv == secret.ResourceVersion {
		return c.client, nil
	}
	cfg, err := RESTConfig(secret)
	if err != nil {
		return nil, fmt.Errorf("%w for DRCluster %s: %w", ErrNoKubeconfig, cluster, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: g.Scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of DRCluster %s: %w", cluster, err)
	}
	if g.clients == nil {
		g.clients = map[string]cachedClient{}
	}
	g.clients[cluster] = cachedClient{version: secret.UID, rv: secret.ResourceVersion, client: cl}
	return cl, nil
}

// RESTConfig builds the configuration of a managed cluster from the kubeconfig Secret of its
// DRCluster, with the gateway's request timeout.
func RESTConfig(secret *corev1.Secret) (*rest.Config, error) {
	raw, ok := secret.Data[v1alpha1.KubeconfigSecretKey]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no key %q: put the cluster's kubeconfig there", secret.Namespace, secret.Name, v1alpha1.KubeconfigSecretKey)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s key %q is not a usable kubeconfig: %w", secret.Namespace, secret.Name, v1alpha1.KubeconfigSecretKey, err)
	}
	cfg.Timeout = requestTimeout
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Probe checks that the cluster answers and serves drover's API with the hub's credential: it
// lists at most one VolumeReplicationGroup.
func Probe(ctx context.Context, cl client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := cl.List(ctx, &v1alpha1.VolumeReplicationGroupList{}, client.Limit(1)); err != nil {
		return fmt.Errorf("failed to list VolumeReplicationGroups: %w", err)
	}
	return nil
}
