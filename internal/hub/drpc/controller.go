package drpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/newest"
	"github.com/drover-io/drover/internal/tenancy"
)

const (
	// Finalizer keeps a DRPlacementControl until its groups are deleted on both clusters.
	Finalizer = "drover.io/drpc-unprotect"
	// fieldOwner names the hub in managedFields.
	fieldOwner = "drover-hub"
)

// Reconciler reconciles DRPlacementControls. It holds its dependencies and the newest version
// it has seen of each DRPlacementControl and PlacementDecision.
type Reconciler struct {
	// Client reads and writes the hub.
	Client client.Client
	// APIReader reads uncached: a DRPlacementControl or PlacementDecision the cache shows
	// older than the hub's own last write to it (newest.Versions), and Argo CD's
	// ApplicationSets and Applications (the hub does not watch them). nil reads everything
	// from Client and skips the Argo CD integration.
	APIReader client.Reader
	// Tenancy are the admin and system namespaces besides the defaults (internal/tenancy).
	Tenancy tenancy.Rules
	// Gateway gives a client of each managed cluster.
	Gateway gateway.Gateway
	// Recorder records the actions' events; nil records none.
	Recorder events.EventRecorder
	// Metrics counts the actions and times them (metrics.go); nil counts nothing.
	Metrics *Metrics
	// Now returns the time; nil means time.Now. Unit tests set it.
	Now func() time.Time
	// Workers is how many DRPlacementControls are reconciled at once; zero takes
	// DefaultWorkers. controller-runtime never hands one DRPlacementControl to two workers at
	// once; everything a reconcile keeps is in its scope, and the dependencies and versions
	// are safe for concurrent use.
	Workers int

	// versions, decisions and placements are the newest version seen of each
	// DRPlacementControl, PlacementDecision and Placement: the state a Reconciler keeps between
	// reconciles, so that none acts on a cached copy from before its own last write (a decision
	// read stale could name again a cluster the hub had just removed).
	versions, decisions, placements newest.Versions
	// owners indexes the oldest DRPlacementControl that may protect each namespace, from the
	// informer's events (owners.go); nil until SetupWithManager.
	owners *namespaceOwners
}

// DefaultWorkers is how many DRPlacementControls the hub reconciles at once by default.
// Measured in the lab (BenchmarkMassActionsByDRPCWorkers, 20 empty applications, 2 cores with a
// load average of 25-30 from other work): protect, fail over and fail back took 12.2-13.1 s,
// 14.2-18.4 s and 20.9-22.1 s with 8 workers, 12.3-20.4 s, 16.5-18.6 s and 20.5-21.1 s with
// one: there, the agents and API servers, not the hub, set the pace. More than one worker is
// kept because a reconcile waits on its clusters' writes (up to the 5 s request timeout for a
// cluster that stops answering mid-write), which with one worker would hold every other
// application; 8 costs nothing while idle. At 100 applications (make bench, 2 cores, the agents'
// workers the same) 4 left half the DRPCs out of Protected when settled and 32 ran three times
// the passes for the same work (a78cbb3, 2026-12-02; docs/benchmarks.md, "The measurements
// today's defaults rest on").
const DefaultWorkers = 8

// +kubebuilder:rbac:groups=drover.io,resources=drplacementcontrols,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=drover.io,resources=drplacementcontrols/status,verbs=get;patch
// +kubebuilder:rbac:groups=drover.io,resources=drpolicies;drclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=drrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=drclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placementdecisions,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placementdecisions/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placements,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placements/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=argoproj.io,resources=applicationsets,verbs=get;list;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list

// SetupWithManager validates the dependencies and registers the controller. A change of a
// DRPolicy or DRCluster reconciles the DRPlacementControls that use it at once; so does, when
// the gateway watches the clusters (a gateway.Notifier), a change of a group on a managed
// cluster (the DRPlacementControl of its namespace and name) and a cluster lost or back (the
// DRPlacementControls whose policy pairs it). A change of a DRRecipe reconciles those that
// name it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("the DRPlacementControl reconciler needs a Client")
	case r.Gateway == nil:
		return errors.New("the DRPlacementControl reconciler needs a Gateway")
	case r.Workers < 0:
		return errors.New("the DRPlacementControl reconciler needs a positive number of Workers")
	}
	workers := r.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	r.owners = newNamespaceOwners()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("drplacementcontrol").
		// Not For: the handler indexes each DRPlacementControl's claims before it queues it.
		Watches(&v1alpha1.DRPlacementControl{}, r.drpcEvents(),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.DRPolicy{}, handler.EnqueueRequestsFromMapFunc(r.drpolicyToDRPCs)).
		Watches(&v1alpha1.DRCluster{}, handler.EnqueueRequestsFromMapFunc(r.drclusterToDRPCs)).
		Watches(&v1alpha1.DRRecipe{}, handler.EnqueueRequestsFromMapFunc(r.drrecipeToDRPCs)).
		// First in, first out: the priority queue puts the DRPlacementControls of the initial
		// list (a restarted hub) behind every event of the others, as it did to the agent's
		// groups (internal/agent/vrg).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, UsePriorityQueue: ptr.To(false)})
	if n, ok := r.Gateway.(gateway.Notifier); ok {
		b = b.WatchesRawSource(source.Channel(n.Changes(), handler.EnqueueRequestsFromMapFunc(r.clusterChangeToDRPCs)))
	}
	return b.Complete(r)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile drives one DRPlacementControl one step through its state machine.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	drpc := &v1alpha1.DRPlacementControl{}
	if err := r.versions.Get(ctx, r.Client, r.APIReader, req.NamespacedName, drpc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if drpc.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(drpc, Finalizer) {
		before := drpc.DeepCopy()
		controllerutil.AddFinalizer(drpc, Finalizer)
		if err := r.Client.Patch(ctx, drpc, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer to DRPlacementControl %s: %w", req.NamespacedName, err)
		}
		r.versions.Seen(drpc)
	}
	sc := newScope(drpc, r.now())
	if !drpc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, sc)
	}
	defer func() {
		if err := r.patchStatus(ctx, sc, reterr == nil); err != nil {
			result, reterr = ctrl.Result{}, errors.Join(reterr, err)
		}
	}()
	if err := r.validate(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	if sc.invalid {
		return ctrl.Result{RequeueAfter: requeueInvalid}, nil
	}
	r.observe(ctx, sc)
	if err := r.observeRecipe(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	if sc.invalid {
		return ctrl.Result{RequeueAfter: requeueInvalid}, nil
	}
	if err := r.observeDecision(ctx, sc); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.next(sc)(ctx, sc)
	if cerr := r.checkFollowers(ctx, sc); cerr != nil {
		return ctrl.Result{}, errors.Join(err, cerr)
	}
	return res, err
}

// patchStatus computes the conditions and patches the status when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, sc *scope, succeeded bool) error {
	if !sc.invalid && sc.policy != nil {
		computeConditions(sc)
	}
	if succeeded {
		sc.drpc.Status.ObservedGeneration = sc.drpc.Generation
	}
	if equality.Semantic.DeepEqual(sc.before.Status, sc.drpc.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sc.drpc, client.MergeFrom(sc.before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch status of DRPlacementControl %s: %w", klog.KObj(sc.drpc), err)
	}
	r.versions.Seen(sc.drpc)
	// Only a transition that was written is told: a failed patch is retried, and told then.
	r.recordTransitions(sc)
	return nil
}

// event records an event on the DRPlacementControl.
func (r *Reconciler) event(sc *scope, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(sc.drpc, nil, eventType, reason, reason, note, args...)
	}
}

// clusterChangeToDRPCs maps a change the gateway saw on a managed cluster to the
// DRPlacementControls it concerns: a group to the DRPlacementControl of its namespace and name
// (the hub names the groups so), a cluster lost or back to those whose policy pairs it.
func (r *Reconciler) clusterChangeToDRPCs(ctx context.Context, obj client.Object) []reconcile.Request {
	if _, ok := obj.(*v1alpha1.DRCluster); ok {
		return r.drclusterToDRPCs(ctx, obj)
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}}
}

// drpolicyToDRPCs maps a DRPolicy to the DRPlacementControls that use it.
func (r *Reconciler) drpolicyToDRPCs(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.drpcsWhere(ctx, func(d *v1alpha1.DRPlacementControl) bool { return d.Spec.DRPolicyRef.Name == obj.GetName() })
}

// drrecipeToDRPCs maps a DRRecipe to the DRPlacementControls of its namespace that name it: a
// recipe created, edited or deleted is checked again at once (and, while no action runs,
// copied into their groups).
func (r *Reconciler) drrecipeToDRPCs(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.drpcsWhere(ctx, func(d *v1alpha1.DRPlacementControl) bool {
		return d.Namespace == obj.GetNamespace() && d.Spec.RecipeRef != nil && d.Spec.RecipeRef.Name == obj.GetName()
	})
}

// drclusterToDRPCs maps a DRCluster to the DRPlacementControls whose policy pairs it.
func (r *Reconciler) drclusterToDRPCs(ctx context.Context, obj client.Object) []reconcile.Request {
	policies := &v1alpha1.DRPolicyList{}
	if err := r.Client.List(ctx, policies); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DRPolicies for a DRCluster", "cluster", obj.GetName())
		return nil
	}
	names := map[string]bool{}
	for _, p := range policies.Items {
		if slices.Contains(p.Spec.DRClusters, obj.GetName()) {
			names[p.Name] = true
		}
	}
	return r.drpcsWhere(ctx, func(d *v1alpha1.DRPlacementControl) bool { return names[d.Spec.DRPolicyRef.Name] })
}

func (r *Reconciler) drpcsWhere(ctx context.Context, match func(*v1alpha1.DRPlacementControl) bool) []reconcile.Request {
	list := &v1alpha1.DRPlacementControlList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DRPlacementControls")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return out
}
