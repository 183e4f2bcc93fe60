package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeconfig"
)

// changesBuffer is how many changes may wait for the hub's controller before the caches' event
// handlers wait for it.
const changesBuffer = 1024

// Secrets is the production Gateway. It reads each DRCluster and its kubeconfig Secret from the
// hub and keeps, per cluster, a client (rebuilt when the Secret changes, which the probe
// notices), the outcome of its last probe and, while the cluster answers, a cache that watches
// its VolumeReplicationGroups. Reads of groups come from that cache; writes go to the cluster.
//
// Health: a cluster answers from its first successful probe until a probe fails, or any
// request to it (a write, the cache's list or watch) cannot connect; then its cache is stopped
// and reads fail at once with that error until a probe succeeds again, which starts a new cache
// (a fresh list: a cache kept across an outage would serve what it had until its watch, backing
// off up to 30 s, reconnects). Each transition, and each cache's first sync, is sent on
// Changes, so the hub reconciles the applications of a cluster the moment it is lost or back.
//
// Secrets is a manager.Runnable: Start stops every cache when the manager stops.
type Secrets struct {
	// WrapTransport, when set before the manager starts, wraps the transport of every managed
	// cluster's client (tests: internal/lab/crash counts and kills the hub's writes there).
	WrapTransport transport.WrapperFunc
	// SecretWriter, when set before the manager starts, writes renewed tokens into the
	// kubeconfig Secrets on the hub (RenewToken); nil renews none.
	SecretWriter client.Writer
	// TokenRenewAfter is the fraction of an expiring token's life after which RenewToken
	// renews it; zero (or out of (0, 1]) takes DefaultTokenRenewAfter.
	TokenRenewAfter float64

	hub    client.Reader
	scheme *runtime.Scheme
	limits Limits
	// namespaces are where kubeconfig Secrets may be read from.
	namespaces []string

	mu       sync.Mutex
	clusters map[string]*remote
	changes  chan event.GenericEvent
	// done is closed when the manager stops: no cache starts after, no change waits.
	done   chan struct{}
	closed bool
}

var (
	_ Gateway                        = (*Secrets)(nil)
	_ Notifier                       = (*Secrets)(nil)
	_ manager.Runnable               = (*Secrets)(nil)
	_ manager.LeaderElectionRunnable = (*Secrets)(nil)
)

// DefaultSecretNamespace is where kubeconfig Secrets are read from, besides the hub's own
// namespace: where `drover cluster join` writes them.
const DefaultSecretNamespace = kubeconfig.DefaultSecretNamespace

// NewSecrets returns a gateway reading DRClusters and Secrets through hub (an uncached reader
// keeps the hub from watching every Secret of the cluster), with clients of the given scheme
// and rate limits. It reads kubeconfig Secrets only in DefaultSecretNamespace and hubNamespace
// (empty: none more): a DRCluster naming a Secret elsewhere would let whoever writes Secrets
// there, or a DRCluster's author, hand the hub any credential, or read any Secret's kubeconfig
// key through the hub.
func NewSecrets(hub client.Reader, scheme *runtime.Scheme, limits Limits, hubNamespace string) *Secrets {
	return &Secrets{hub: hub, scheme: scheme, limits: limits.orDefault(), namespaces: kubeconfig.SecretNamespaces(hubNamespace), clusters: map[string]*remote{},
		changes: make(chan event.GenericEvent, changesBuffer), done: make(chan struct{})}
}

// Changes implements Notifier.
func (g *Secrets) Changes() <-chan event.GenericEvent { return g.changes }

// Start waits for the manager to stop, then stops every cache.
func (g *Secrets) Start(ctx context.Context) error {
	<-ctx.Done()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	close(g.done)
	for _, rm := range g.clusters {
		rm.stopWatch()
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the caches are started by the
// probes, which run only in the leader; stopping them must not wait for leadership.
func (g *Secrets) NeedLeaderElection() bool { return false }

// Client implements Gateway. It reads the Secret only for a cluster it holds no client of yet;
// a changed Secret is noticed by the next probe.
func (g *Secrets) Client(ctx context.Context, cluster string) (client.Client, error) {
	g.mu.Lock()
	rm := g.clusters[cluster]
	g.mu.Unlock()
	if rm == nil {
		var err error
		if rm, err = g.resolve(ctx, cluster); err != nil {
			return nil, err
		}
		// A client made before any probe (a reconcile that ran first) probes once, so its
		// reads need not wait for the DRCluster's next probe.
		g.observe(rm, Probe(ctx, rm.direct))
	}
	return &cachedReads{Client: rm.direct, g: g, rm: rm}, nil
}

// Probe implements Gateway.
func (g *Secrets) Probe(ctx context.Context, cluster string) (client.Client, error) {
	rm, err := g.resolve(ctx, cluster)
	if err != nil {
		return nil, err
	}
	err = Probe(ctx, rm.direct)
	g.observe(rm, err)
	if err != nil {
		return nil, err
	}
	return &cachedReads{Client: rm.direct, g: g, rm: rm}, nil
}

// Forget implements Gateway.
func (g *Secrets) Forget(cluster string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rm := g.clusters[cluster]; rm != nil {
		rm.stopWatch()
		delete(g.clusters, cluster)
	}
}

// resolve reads the cluster's DRCluster and kubeconfig Secret and returns its client, rebuilt
// (and its cache stopped) when the Secret changed. An unusable Secret drops the client, so the
// cluster's reads fail with the reason until it is fixed.
func (g *Secrets) resolve(ctx context.Context, cluster string) (*remote, error) {
	secret, err := g.secret(ctx, cluster)
	if err != nil {
		g.dropOnNoKubeconfig(cluster, err)
		return nil, err
	}
	g.mu.Lock()
	old := g.clusters[cluster]
	g.mu.Unlock()
	if old != nil && old.uid == secret.UID && old.rv == secret.ResourceVersion {
		return old, nil
	}
	rm, err := g.newRemote(cluster, secret)
	if err != nil {
		g.dropOnNoKubeconfig(cluster, err)
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.clusters[cluster]; cur != nil {
		if cur.uid == secret.UID && cur.rv == secret.ResourceVersion {
			return cur, nil // built by a concurrent call
		}
		cur.stopWatch()
	}
	g.clusters[cluster] = rm
	return rm, nil
}

func (g *Secrets) secret(ctx context.Context, cluster string) (*corev1.Secret, error) {
	drc := &v1alpha1.DRCluster{}
	if err := g.hub.Get(ctx, client.ObjectKey{Name: cluster}, drc); err != nil {
		return nil, fmt.Errorf("failed to get DRCluster %s: %w", cluster, err)
	}
	ref := drc.Spec.KubeconfigSecretRef
	if err := kubeconfig.SecretRef(cluster, ref, g.namespaces); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoKubeconfig, err)
	}
	secret := &corev1.Secret{}
	if err := g.hub.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("%w for DRCluster %s: failed to get Secret %s/%s: %w", ErrNoKubeconfig, cluster, ref.Namespace, ref.Name, err)
	}
	return secret, nil
}

// dropOnNoKubeconfig forgets a cluster whose Secret is missing or unusable, telling the hub.
func (g *Secrets) dropOnNoKubeconfig(cluster string, err error) {
	if !errors.Is(err, ErrNoKubeconfig) {
		return
	}
	g.mu.Lock()
	_, held := g.clusters[cluster]
	g.mu.Unlock()
	if held {
		g.Forget(cluster)
		g.notifyCluster(cluster)
	}
}

// notifyCluster tells the hub that a cluster's health changed.
func (g *Secrets) notifyCluster(cluster string) {
	g.send(event.GenericEvent{Object: &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}, nil)
}

// send queues a change for the hub, unless the manager stops first, or stop is closed.
func (g *Secrets) send(ev event.GenericEvent, stop <-chan struct{}) {
	select {
	case g.changes <- ev:
	case <-g.done:
	case <-stop:
	}
}
