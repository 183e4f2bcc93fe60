package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/drover-io/drover/api/v1alpha1"
)

// syncWait bounds how long a read waits for a cache that has just started (a hub starting, a
// cluster back): the list behind it takes well under a second; past that the cluster is
// treated as not answering for this read, and the cache's sync wakes the hub.
const syncWait = 3 * time.Second

// remote is one managed cluster as the gateway holds it: built from one version of its
// kubeconfig Secret. Its health and watch are guarded by Secrets.mu.
type remote struct {
	cluster string
	uid     types.UID
	rv      string
	// cfg is the cluster's configuration, its transport reporting requests that get no answer.
	cfg    *rest.Config
	direct client.Client

	// probed is set by the first probe; err is why the cluster does not answer, nil while it
	// does.
	probed bool
	err    error
	// watch is the running cache of the cluster's groups; nil while the cluster does not answer.
	watch *watch
}

// watch is one run of a cache of a cluster's VolumeReplicationGroups.
type watch struct {
	cache cache.Cache
	stop  context.CancelFunc
	// synced is closed once the cache has listed the groups.
	synced chan struct{}
}

func (g *Secrets) newRemote(cluster string, secret *corev1.Secret) (*remote, error) {
	cfg, err := RESTConfig(secret)
	if err != nil {
		return nil, fmt.Errorf("%w for DRCluster %s: %w", ErrNoKubeconfig, cluster, err)
	}
	cfg.QPS, cfg.Burst = g.limits.QPS, g.limits.Burst
	if g.WrapTransport != nil {
		cfg.Wrap(g.WrapTransport)
	}
	rm := &remote{cluster: cluster, uid: secret.UID, rv: secret.ResourceVersion, cfg: cfg}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &reporter{next: rt, g: g, rm: rm} })
	if rm.direct, err = client.New(cfg, client.Options{Scheme: g.scheme}); err != nil {
		return nil, fmt.Errorf("failed to create a client of DRCluster %s: %w", cluster, err)
	}
	return rm, nil
}

// answering reports whether the cluster answered its last probe and request.
func (rm *remote) answering() bool { return rm.probed && rm.err == nil }

// stopWatch stops the cluster's cache, if it runs. Called with Secrets.mu held.
func (rm *remote) stopWatch() {
	if rm.watch != nil {
		rm.watch.stop()
		rm.watch = nil
	}
}

// observe records whether a cluster answered (err nil) or not: a cluster that stops answering
// loses its cache at once, one that answers gets a cache if it has none. A transition to not
// answering is sent to the hub now; the way back is sent once the new cache has synced.
func (g *Secrets) observe(rm *remote, err error) {
	g.mu.Lock()
	if g.clusters[rm.cluster] != rm {
		g.mu.Unlock()
		return // a client replaced since, or forgotten
	}
	was := rm.answering()
	rm.probed, rm.err = true, err
	if err != nil {
		rm.stopWatch()
	} else if rm.watch == nil && !g.closed {
		if serr := g.startWatch(rm); serr != nil {
			rm.err = serr
		}
	}
	lost, now := was && !rm.answering(), rm.err
	g.mu.Unlock()
	if lost {
		ctrl.Log.WithName("gateway").Info("Cluster does not answer", "cluster", rm.cluster, "error", now.Error())
		g.notifyCluster(rm.cluster)
	}
}

// startWatch starts a cache of the cluster's VolumeReplicationGroups (and nothing else: reads
// of other kinds fail instead of starting informers the hub's credential may not allow). Every
// added, changed or deleted group is sent to the hub. Called with Secrets.mu held.
func (g *Secrets) startWatch(rm *remote) error {
	cfg := rest.CopyConfig(rm.cfg)
	cfg.Timeout = 0 // a watch is a long request; the client-side timeout would cut it
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind("VolumeReplicationGroup"), meta.RESTScopeNamespace)
	c, err := cache.New(cfg, cache.Options{
		Scheme: g.scheme, Mapper: mapper, ReaderFailOnMissingInformer: true,
		ByObject:         map[client.Object]cache.ByObject{&v1alpha1.VolumeReplicationGroup{}: {}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("failed to create the cache of DRCluster %s: %w", rm.cluster, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := c.GetInformer(ctx, &v1alpha1.VolumeReplicationGroup{})
	if err != nil {
		cancel()
		return fmt.Errorf("failed to watch VolumeReplicationGroups of DRCluster %s: %w", rm.cluster, err)
	}
	notify := func(obj any) { g.notifyGroup(obj, ctx.Done()) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) },
	}); err != nil {
		cancel()
		return fmt.Errorf("failed to watch VolumeReplicationGroups of DRCluster %s: %w", rm.cluster, err)
	}
	w := &watch{cache: c, stop: cancel, synced: make(chan struct{})}
	rm.watch = w
	go func() {
		if err := c.Start(ctx); err != nil {
			ctrl.Log.WithName("gateway").Error(err, "Cache stopped", "cluster", rm.cluster)
		}
	}()
	go func() {
		if c.WaitForCacheSync(ctx) {
			close(w.synced)
			g.notifyCluster(rm.cluster)
		}
	}()
	return nil
}

// notifyGroup sends a group's namespace and name to the hub.
func (g *Secrets) notifyGroup(obj any, stop <-chan struct{}) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	g.send(event.GenericEvent{Object: &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()},
	}}, stop)
}

// groups returns the cache to read a cluster's groups from, or why the cluster does not answer.
func (g *Secrets) groups(ctx context.Context, rm *remote) (client.Reader, error) {
	g.mu.Lock()
	err, probed, w := rm.err, rm.probed, rm.watch
	g.mu.Unlock()
	switch {
	case err != nil:
		return nil, fmt.Errorf("cluster %s does not answer: %w", rm.cluster, err)
	case !probed || w == nil:
		return nil, fmt.Errorf("cluster %s has not answered a probe yet", rm.cluster)
	}
	select {
	case <-w.synced:
		return w.cache, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(syncWait):
		return nil, fmt.Errorf("the hub's watch of cluster %s has not synced within %s", rm.cluster, syncWait)
	}
}

// cachedReads is a client of a managed cluster that reads VolumeReplicationGroups from the
// gateway's cache and does everything else on the cluster.
type cachedReads struct {
	client.Client
	g  *Secrets
	rm *remote
}

// Get implements client.Reader.
func (c *cachedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1alpha1.VolumeReplicationGroup); !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	r, err := c.g.groups(ctx, c.rm)
	if err != nil {
		return err
	}
	return r.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (c *cachedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1alpha1.VolumeReplicationGroupList); !ok {
		return c.Client.List(ctx, list, opts...)
	}
	r, err := c.g.groups(ctx, c.rm)
	if err != nil {
		return err
	}
	return r.List(ctx, list, opts...)
}

// reporter tells the gateway about every request to a cluster that could not reach it
// (connection refused, reset, no route), so a lost cluster is noticed by the first request that
// fails, not only by the next probe. A request that ended with its context (cancelled by its
// caller, or past its deadline, which is how client-go's timeout ends it) is not reported: a
// slow cluster is not a lost one, and the probe, whose own failure always counts, decides.
type reporter struct {
	next http.RoundTripper
	g    *Secrets
	rm   *remote
}

// RoundTrip implements http.RoundTripper.
func (r *reporter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil && req.Context().Err() == nil && !errors.Is(err, context.Canceled) {
		r.g.observe(r.rm, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err))
	}
	return resp, err
}
