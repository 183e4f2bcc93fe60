package drill

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

// One drill of an application runs or waits at a time: the one that holds the application's
// turn, which is the drill that runs, else the oldest that is not final. Every other drill is
// refused at once (DrillRunning, DrillWaiting), so a tenant keeps at most one drill waiting per
// application, whatever it creates. Finding the turn by listing the namespace's drills costs
// each drill as many as there are: a tenant's 10,000 drills cost the API server (the list was
// uncached, so that a drill accepted a moment ago is seen) 10,000 × 10,000 objects. So the hub
// keeps, from the DRDrill informer's events (its own handler, which indexes a drill before it
// queues it, so every older one is seen), each application's drills that are not final and
// their turn, and the finished ones for the history (history.go): a reconcile reads its
// application's turn in O(1) and lists nothing. A drill the hub accepts is marked running in
// the index at once, before any event says so: the next drill judged sees it.

// application is the key of an application's drills: the namespace and DRPlacementControl.
type application struct {
	namespace, drpc string
}

func applicationOf(d *v1alpha1.DRDrill) application {
	return application{namespace: d.Namespace, drpc: d.Spec.DRPCName}
}

// entry is one drill in the index.
type entry struct {
	key     types.NamespacedName
	uid     types.UID
	created metav1.Time
	// running: accepted and not final (running), which the index never takes back while the
	// drill is not final.
	running bool
}

func entryOf(d *v1alpha1.DRDrill) entry {
	return entry{key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, uid: d.UID, created: d.CreationTimestamp,
		running: running(d.Status.Phase)}
}

// before orders entries as older orders drills: by creation, then by name.
func (e entry) before(o entry) bool {
	if !e.created.Equal(&o.created) {
		return e.created.Before(&o.created)
	}
	return e.key.Name < o.key.Name
}

// appDrills are one application's drills: open (not final) with the one holding the turn, and
// done (final and not being deleted).
type appDrills struct {
	open   map[types.NamespacedName]entry
	done   map[types.NamespacedName]entry
	holder *entry
}

// drillIndex is the index of every application's drills. Safe for concurrent use.
type drillIndex struct {
	mu   sync.Mutex
	apps map[application]*appDrills
}

func newDrillIndex() *drillIndex { return &drillIndex{apps: map[application]*appDrills{}} }

// observe records a drill as an event shows it.
func (x *drillIndex) observe(d *v1alpha1.DRDrill) {
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.app(applicationOf(d))
	e := entryOf(d)
	old, wasOpen := a.open[e.key]
	switch {
	case !final(d.Status.Phase):
		e.running = e.running || old.running
		if wasOpen && e.running == old.running {
			a.open[e.key] = e // no change of the turn: O(1)
			return
		}
		a.remove(e.key)
		a.add(e)
	default:
		a.remove(e.key)
		if d.DeletionTimestamp.IsZero() {
			a.done[e.key] = e
		}
	}
}

// forget removes a deleted drill.
func (x *drillIndex) forget(d *v1alpha1.DRDrill) {
	x.mu.Lock()
	defer x.mu.Unlock()
	app := applicationOf(d)
	if a := x.apps[app]; a != nil {
		a.remove(entryOf(d).key)
		delete(a.done, entryOf(d).key)
		if len(a.open) == 0 && len(a.done) == 0 {
			delete(x.apps, app)
		}
	}
}

// markRunning records that the hub accepted a drill, before its event arrives.
func (x *drillIndex) markRunning(d *v1alpha1.DRDrill) {
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.app(applicationOf(d))
	e := entryOf(d)
	e.running = true
	a.remove(e.key)
	a.add(e)
}

// turn returns the drill that holds the application's turn, and whether the index holds the
// drill key as open: a reconcile of key trusts the turn only then, since the index has then
// seen every drill created before it (the informer delivers the events in order).
func (x *drillIndex) turn(d *v1alpha1.DRDrill) (entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.apps[applicationOf(d)]
	if a == nil || a.holder == nil {
		return entry{}, false
	}
	_, known := a.open[entryOf(d).key]
	return *a.holder, known
}

// openDrills returns the keys of an application's drills that are not final.
func (x *drillIndex) openDrills(namespace, drpc string) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.apps[application{namespace: namespace, drpc: drpc}]
	if a == nil {
		return nil
	}
	out := make([]types.NamespacedName, 0, len(a.open))
	for k := range a.open {
		out = append(out, k)
	}
	return out
}

// finished returns an application's final drills that are not being deleted.
func (x *drillIndex) finished(namespace, drpc string) []entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.apps[application{namespace: namespace, drpc: drpc}]
	if a == nil {
		return nil
	}
	out := make([]entry, 0, len(a.done))
	for _, e := range a.done {
		out = append(out, e)
	}
	return out
}

// deleting removes a finished drill the hub deletes, so that the next pruning does not
// delete it again before its event arrives.
func (x *drillIndex) deleting(namespace, drpc string, key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if a := x.apps[application{namespace: namespace, drpc: drpc}]; a != nil {
		delete(a.done, key)
	}
}

func (x *drillIndex) app(k application) *appDrills {
	a := x.apps[k]
	if a == nil {
		a = &appDrills{open: map[types.NamespacedName]entry{}, done: map[types.NamespacedName]entry{}}
		x.apps[k] = a
	}
	return a
}

// takes reports whether e takes the turn from the holder h: a running drill holds it against
// any that is not, else the older one.
func takes(e, h entry) bool {
	if e.running != h.running {
		return e.running
	}
	return e.before(h)
}

// add records an open drill, in O(1).
func (a *appDrills) add(e entry) {
	a.open[e.key] = e
	delete(a.done, e.key)
	if a.holder == nil || takes(e, *a.holder) {
		a.holder = &e
	}
}

// remove takes a drill out of the open ones; when it held the turn, the next holder is found
// by one walk of the application's open drills.
func (a *appDrills) remove(key types.NamespacedName) {
	if _, ok := a.open[key]; !ok {
		return
	}
	delete(a.open, key)
	if a.holder == nil || a.holder.key != key {
		return
	}
	a.holder = nil
	for _, e := range a.open {
		if a.holder == nil || takes(e, *a.holder) {
			next := e
			a.holder = &next
		}
	}
}

// drillEvents is the handler of the DRDrill informer's events: it records each drill in the
// index before it queues it, so that its reconcile finds it and every older one.
func (r *Reconciler) drillEvents() handler.EventHandler {
	enqueue := &handler.EnqueueRequestForObject{}
	asDrill := func(obj client.Object) *v1alpha1.DRDrill {
		d, _ := obj.(*v1alpha1.DRDrill)
		return d
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d := asDrill(e.Object); d != nil {
				r.drills.observe(d)
			}
			enqueue.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d := asDrill(e.ObjectNew); d != nil {
				r.drills.observe(d)
			}
			enqueue.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d := asDrill(e.Object); d != nil {
				r.drills.forget(d)
			}
			enqueue.Delete(ctx, e, q)
		},
		GenericFunc: enqueue.Generic,
	}
}
