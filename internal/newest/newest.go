// Package newest keeps a controller from acting on a cached copy of its object older than one it
// has already seen.
//
// A controller-runtime cache shows a write only once its watch delivers it. A controller that
// wakes on other objects' events (a group on a managed cluster, a pod, a VolumeReplication) may
// reconcile its object in between, on the copy from before its own last write: a status whose
// step it has already taken, an annotation that records work already done. Versions remembers
// the newest resourceVersion seen of each object, the answer to the controller's own write or a
// copy read from the API server, and reads from the API server whenever the cache shows another.
// Resource versions are compared for equality only, as the API conventions ask.
package newest

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Versions is the newest resourceVersion seen of each object of one kind. The zero value is
// ready to use; it is safe for concurrent use.
type Versions struct {
	m sync.Map // client.ObjectKey → resourceVersion
}

// Seen records obj, as a write answered it or the API server returned it, as the newest version.
func (v *Versions) Seen(obj client.Object) {
	v.m.Store(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
}

// Forget drops what was seen of an object that is gone.
func (v *Versions) Forget(key client.ObjectKey) { v.m.Delete(key) }

// Shows reports whether obj is the newest version seen of it, or one of which none was seen.
func (v *Versions) Shows(obj client.Object) bool {
	seen, ok := v.m.Load(client.ObjectKeyFromObject(obj))
	return !ok || seen == obj.GetResourceVersion()
}

// Get reads the object key into obj from cached or, when the cached copy is not the newest
// version seen, from live; a nil live reads from cached only. A cache ahead of what was seen (the
// object changed since, by someone else) costs one read too, after which it is the newest seen.
// NotFound forgets the object.
func (v *Versions) Get(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object) error {
	err := cached.Get(ctx, key, obj)
	if err == nil && live != nil && !v.Shows(obj) {
		err = live.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		v.Forget(key)
		return err
	case err != nil:
		return err
	}
	v.Seen(obj)
	return nil
}
