package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

const (
	// Finalizer keeps an accepted DRDrill until its sandbox is gone from the target cluster, so
	// deleting a running drill tears its sandbox down. It is removed once the drill is final.
	Finalizer = "drover.io/drill-teardown"
	// fieldOwner names the hub in managedFields.
	fieldOwner = "drover-hub"
)

// Reconciler reconciles DRDrills. It holds only its dependencies.
type Reconciler struct {
	// Client reads and writes the hub.
	Client client.Client
	// APIReader reads uncached: the drills of an application when deciding whether another one
	// runs, so two drills created together are never both accepted. nil reads from Client.
	APIReader client.Reader
	// Gateway gives a client of each managed cluster.
	Gateway gateway.Gateway
	// Recorder records the drills' events; nil records none.
	Recorder events.EventRecorder
	// Now returns the time; nil means time.Now. Unit tests set it.
	Now func() time.Time

	// drills indexes every application's drills and its turn, from the informer's events
	// (turns.go); nil until SetupWithManager, and then the drills are listed.
	drills *drillIndex
}

// +kubebuilder:rbac:groups=drover.io,resources=drdrills,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=drover.io,resources=drdrills/status,verbs=get;patch
// +kubebuilder:rbac:groups=drover.io,resources=drplacementcontrols,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=drpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// SetupWithManager validates the dependencies and registers the controller. A change of a
// DRPlacementControl reconciles its drills that are not final at once, so a failover asked for
// during a drill aborts it without waiting for the next poll. One worker: drills are rare,
// and deciding that no other drill of the application runs is then never raced by a second
// worker.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("the DRDrill reconciler needs a Client")
	case r.Gateway == nil:
		return errors.New("the DRDrill reconciler needs a Gateway")
	}
	r.drills = newDrillIndex()
	return ctrl.NewControllerManagedBy(mgr).
		Named("drdrill").
		// Not For: the handler indexes each drill before it queues it.
		Watches(&v1alpha1.DRDrill{}, r.drillEvents()).
		Watches(&v1alpha1.DRPlacementControl{}, handler.EnqueueRequestsFromMapFunc(r.drpcToDrills)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// Reconcile moves one DRDrill one step through its states.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	drill := &v1alpha1.DRDrill{}
	if err := r.Client.Get(ctx, req.NamespacedName, drill); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !drill.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, newScope(drill, r.now()))
	}
	if final(drill.Status.Phase) {
		return ctrl.Result{}, r.finish(ctx, drill)
	}
	if !controllerutil.ContainsFinalizer(drill, Finalizer) {
		if err := r.patchFinalizer(ctx, drill, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	sc := newScope(drill, r.now())
	defer func() {
		if err := r.patchStatus(ctx, sc); err != nil {
			result, reterr = ctrl.Result{}, errors.Join(reterr, err)
		}
	}()
	if err := r.observe(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	return r.next(sc)(ctx, sc)
}

// finish is the work on a final drill: its finalizer removed, the application's history pruned.
func (r *Reconciler) finish(ctx context.Context, drill *v1alpha1.DRDrill) error {
	if controllerutil.ContainsFinalizer(drill, Finalizer) {
		if err := r.patchFinalizer(ctx, drill, false); err != nil {
			return err
		}
	}
	return r.pruneHistory(ctx, drill.Namespace, drill.Spec.DRPCName)
}

// patchFinalizer adds or removes the finalizer.
func (r *Reconciler) patchFinalizer(ctx context.Context, drill *v1alpha1.DRDrill, add bool) error {
	before := drill.DeepCopy()
	if add {
		controllerutil.AddFinalizer(drill, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(drill, Finalizer)
	}
	if err := r.Client.Patch(ctx, drill, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch the finalizer of DRDrill %s: %w", klog.KObj(drill), err)
	}
	return nil
}

// patchStatus patches the status when it changed, and records the transition's events once
// written.
func (r *Reconciler) patchStatus(ctx context.Context, sc *scope) error {
	sc.drill.Status.ObservedGeneration = sc.drill.Generation
	if equality.Semantic.DeepEqual(sc.before.Status, sc.drill.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sc.drill, client.MergeFrom(sc.before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch status of DRDrill %s: %w", klog.KObj(sc.drill), err)
	}
	if r.drills != nil && running(sc.drill.Status.Phase) && !running(sc.before.Status.Phase) {
		// Accepted: the next drill judged sees it, before its event arrives.
		r.drills.markRunning(sc.drill)
	}
	r.recordTransition(sc)
	return nil
}

// event records an event on the drill and, when there is one, on its DRPlacementControl.
func (r *Reconciler) event(sc *scope, eventType, reason, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	var related runtime.Object
	if sc.drpc != nil {
		related = sc.drpc
	}
	r.Recorder.Eventf(sc.drill, related, eventType, reason, reason, note, args...)
	if sc.drpc != nil {
		r.Recorder.Eventf(sc.drpc, sc.drill, eventType, reason, reason, "drill "+sc.drill.Name+": "+note, args...)
	}
}

// drpcToDrills maps a DRPlacementControl to its drills that are not final: from the index, or
// a list without one.
func (r *Reconciler) drpcToDrills(ctx context.Context, obj client.Object) []reconcile.Request {
	if r.drills != nil {
		var out []reconcile.Request
		for _, k := range r.drills.openDrills(obj.GetNamespace(), obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: k})
		}
		return out
	}
	list := &v1alpha1.DRDrillList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DRDrills for a DRPlacementControl", "drpc", klog.KObj(obj))
		return nil
	}
	var out []reconcile.Request
	for _, d := range list.Items {
		if d.Spec.DRPCName == obj.GetName() && !final(d.Status.Phase) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
		}
	}
	return out
}
