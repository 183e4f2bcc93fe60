package drpc

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A namespace is protected by one DRPlacementControl: the oldest of those that may protect it
// (namespaceConflict). Finding it by listing the namespace's DRPlacementControls costs each
// reconcile as many as there are: a tenant's 10,000 DRPlacementControls of one namespace, each
// refused and looked at again every requeueInvalid, cost the API server (the list used to be
// uncached) or the hub (the cache copies what it lists) 10,000 × 10,000 objects a period. So the
// hub keeps, from the DRPlacementControl informer's events, the claims on each namespace and the
// oldest of them: a reconcile asks for its namespaces' owners, in O(1) each.

// claim is a DRPlacementControl's claim on a namespace it may protect.
type claim struct {
	key     types.NamespacedName
	created metav1.Time
	uid     types.UID
}

func claimOf(d *v1alpha1.DRPlacementControl) claim {
	return claim{key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, created: d.CreationTimestamp, uid: d.UID}
}

// before orders claims as older orders DRPlacementControls: by creation, then by UID.
func (c claim) before(o claim) bool {
	if !c.created.Equal(&o.created) {
		return c.created.Before(&o.created)
	}
	return c.uid < o.uid
}

// namespaceOwners is the index: per namespace, the claims of the DRPlacementControls that may
// protect it (protectedNamespaces and placementRef cannot change, so a DRPlacementControl's claims
// are made at its creation and withdrawn at its deletion) and the oldest of them. Safe for
// concurrent use.
type namespaceOwners struct {
	mu     sync.Mutex
	claims map[string]map[types.NamespacedName]claim
	owner  map[string]claim
}

func newNamespaceOwners() *namespaceOwners {
	return &namespaceOwners{claims: map[string]map[types.NamespacedName]claim{}, owner: map[string]claim{}}
}

// add records the claims of a DRPlacementControl on namespaces.
func (o *namespaceOwners) add(c claim, namespaces []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ns := range namespaces {
		if o.claims[ns] == nil {
			o.claims[ns] = map[types.NamespacedName]claim{}
		}
		o.claims[ns][c.key] = c
		if cur, ok := o.owner[ns]; !ok || c.before(cur) {
			o.owner[ns] = c
		}
	}
}

// remove withdraws the claims of a DRPlacementControl, and returns the namespaces' new owners
// where it owned them (to be reconciled: they may now protect them).
func (o *namespaceOwners) remove(key types.NamespacedName, namespaces []string) []types.NamespacedName {
	o.mu.Lock()
	defer o.mu.Unlock()
	var next []types.NamespacedName
	for _, ns := range namespaces {
		delete(o.claims[ns], key)
		if o.owner[ns].key != key {
			continue
		}
		delete(o.owner, ns)
		// The owner went: the oldest of the rest, found once, by a walk of this namespace's claims.
		for _, c := range o.claims[ns] {
			if cur, ok := o.owner[ns]; !ok || c.before(cur) {
				o.owner[ns] = c
			}
		}
		if len(o.claims[ns]) == 0 {
			delete(o.claims, ns)
			continue
		}
		next = append(next, o.owner[ns].key)
	}
	return next
}

// ownerOf returns the owner of a namespace, and whether the index holds the claim of key on it:
// a reconcile of key trusts the owner only then, since the index has then seen every
// DRPlacementControl created before key (the informer delivers the events in order).
func (o *namespaceOwners) ownerOf(ns string, key types.NamespacedName) (claim, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, known := o.claims[ns][key]
	return o.owner[ns], known
}

// drpcEvents is the handler of the DRPlacementControl informer's events: it records each
// DRPlacementControl's claims before it queues it, so that its reconcile finds them; a
// deletion queues the namespaces' new owners too.
func (r *Reconciler) drpcEvents() handler.EventHandler {
	enqueue := &handler.EnqueueRequestForObject{}
	claims := func(obj client.Object) (*v1alpha1.DRPlacementControl, []string) {
		d, ok := obj.(*v1alpha1.DRPlacementControl)
		if !ok {
			return nil, nil
		}
		if reason, _ := r.tenancyProblem(d); reason != "" {
			return d, nil // it squats nothing
		}
		return d, protectedNamespaces(d)
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d, namespaces := claims(e.Object); d != nil {
				r.owners.add(claimOf(d), namespaces)
			}
			enqueue.Create(ctx, e, q)
		},
		UpdateFunc: enqueue.Update,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d, namespaces := claims(e.Object); d != nil {
				for _, next := range r.owners.remove(claimOf(d).key, namespaces) {
					q.Add(reconcile.Request{NamespacedName: next})
				}
			}
			enqueue.Delete(ctx, e, q)
		},
		GenericFunc: enqueue.Generic,
	}
}
