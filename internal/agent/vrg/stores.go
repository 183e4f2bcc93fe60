package vrg

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
)

// The stores the agent builds are kept across passes. Building one reads its profile's
// credentials Secret from the API server: once per profile per pass, at 100 groups every 5 s
// with two profiles 40 reads a second for nothing. A store built from a Secret is reused while
// the watch-backed cache of Secrets' metadata (Reconciler.Cache, the capture's) shows that
// Secret at the same resourceVersion: new credentials are read by the first pass after the
// watch shows them. Without a cache, or before its informer has synced, the Secret is read every
// pass as before.

// NewS3Store is the production StoreFactory: the profile's S3 store with every object sealed
// under the profile's store keys (objectstore.Sealed): what the agent writes is encrypted and
// authenticated, and what it reads is refused unless it opens (docs/security.md, "The S3
// stores"). A profile without keys is refused: nothing is written in clear.
func NewS3Store(p objectstore.Profile) (objectstore.Store, error) {
	return newS3Store(p, nil)
}

// S3StoreFactory is NewS3Store with the cost of sealing and opening counted in m.
func S3StoreFactory(m *objectstore.SealMetrics) StoreFactory {
	return func(p objectstore.Profile) (objectstore.Store, error) { return newS3Store(p, m) }
}

func newS3Store(p objectstore.Profile, m *objectstore.SealMetrics) (objectstore.Store, error) {
	if p.Keys.Empty() {
		return nil, &objectstore.Error{Kind: objectstore.KindInvalidProfile, Profile: p.Name, Secret: p.SecretNamespace + "/" + p.SecretName,
			Err: fmt.Errorf("it has no store keys (%s in its Secret): run `drover cluster join` again for the cluster of this profile, which adds them", objectstore.SecretStoreKeysKey)}
	}
	s, err := objectstore.NewS3(p)
	if err != nil {
		return nil, err
	}
	return m.Sealed(s, p.Keys), nil
}

// storeCache holds the stores built, by profile.
type storeCache struct {
	mu    sync.Mutex
	built map[v1alpha1.S3Profile]cachedStore
}

// cachedStore is a store and the resourceVersion of the Secret it was built from.
type cachedStore struct {
	version string
	store   objectstore.Store
}

// get returns the store built for profile from the Secret at version; nil when there is none
// or version is unknown ("").
func (c *storeCache) get(profile v1alpha1.S3Profile, version string) objectstore.Store {
	if c == nil || version == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.built[profile]; ok && b.version == version {
		return b.store
	}
	return nil
}

// put keeps the store built for profile from the Secret at version.
func (c *storeCache) put(profile v1alpha1.S3Profile, version string, store objectstore.Store) {
	if c == nil || version == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		c.built = map[v1alpha1.S3Profile]cachedStore{}
	}
	c.built[profile] = cachedStore{version: version, store: store}
}

// secretVersion is the resourceVersion of a profile's Secret as the watch-backed cache of
// Secrets' metadata shows it; "" when it does not (no cache, not synced, no such Secret).
func (r *Reconciler) secretVersion(ctx context.Context, ref v1alpha1.SecretRef) string {
	meta, ok := r.cachedMetadata(ctx, corev1.SchemeGroupVersion.WithKind("Secret"), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name})
	if !ok {
		return ""
	}
	return meta.ResourceVersion
}

// namespaceGVK is the kind of a Namespace, for the metadata cache.
var namespaceGVK = kubeobjects.KindNamespace.WithVersion("v1")

// cachedMetadata is an object's metadata as the watch-backed metadata cache (Reconciler.Cache)
// shows it; ok is false when it cannot say: no cache, an informer not synced yet (started now,
// never waited for), no such object.
func (r *Reconciler) cachedMetadata(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*metav1.PartialObjectMetadata, bool) {
	if r.Cache == nil {
		return nil, false
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	inf, err := r.Cache.GetInformer(ctx, meta, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return nil, false
	}
	if err := r.Cache.Get(ctx, key, meta); err != nil {
		return nil, false
	}
	return meta, true
}
