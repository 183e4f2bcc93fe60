package vrg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/newest"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
	"github.com/drover-io/drover/internal/tenancy"
	"github.com/drover-io/drover/internal/version"
)

const (
	// Finalizer keeps a VolumeReplicationGroup until its PVCs are unprotected.
	Finalizer = "drover.io/vrg-unprotect"
	// PVCFinalizer marks a protected PVC; it is removed when the PVC is unprotected.
	PVCFinalizer = "drover.io/vrg-protection"
	// LabelProtectedBy marks a protected PVC, and its PV, with the name of its
	// VolumeReplicationGroup.
	LabelProtectedBy = "drover.io/protected-by"
	// LabelProtectedByNamespace marks a protected PVC, and its PV, with the namespace of its
	// VolumeReplicationGroup: a group in an admin namespace protects PVCs of other namespaces,
	// and two such groups may share a name. A PVC labelled before this label existed carries
	// only LabelProtectedBy; it is read as before and labelled at the group's next reconcile.
	LabelProtectedByNamespace = "drover.io/protected-by-namespace"
	// AnnotationOriginalReclaimPolicy records on a protected PVC's PV the reclaim policy it had
	// before drover set Retain, so unprotecting can restore it.
	AnnotationOriginalReclaimPolicy = "drover.io/original-reclaim-policy"

	// fieldOwner names the agent in the objects' managedFields.
	fieldOwner = "drover-agent"
)

// Requeue delays. Watches on PVCs and VolumeReplications wake the reconciler on most changes;
// these bound the wait for what no watch reports.
const (
	// requeueWaitingForStorage: a PVC is not bound yet or the storage has not completed a request.
	requeueWaitingForStorage = 2 * time.Second
	// requeueWaitingForFirstSync: every PVC replicates, and some have not completed a sync yet.
	requeueWaitingForFirstSync = 2 * time.Second
	// requeueAfterFailure: a PVC cannot be protected until someone acts. Watches see the usual
	// fixes (a VolumeReplicationClass created, a PVC relabelled); this catches the others
	// (a StorageClass created, a group's spec fixed elsewhere).
	requeueAfterFailure = 30 * time.Second
	// requeueSafety: the periodic re-check of a fully protected group, which refreshes its sync
	// times and rewrites metadata that changed without an event.
	requeueSafety = time.Minute
	// requeueStoreDown: a pass whose only failures are S3 profiles that do not answer (the usual
	// failover: the old primary's store went down with its cluster) retries after this delay, not
	// on the rate limiter's backoff that starts at 5 ms. The conditions name the store; at 30
	// groups each such pass was retried about ten times in its first seconds, CPU the failover
	// needed.
	requeueStoreDown = 5 * time.Second
)

// StoreFactory builds the Store of one S3 profile; NewS3Store in production, fakes in tests.
type StoreFactory func(objectstore.Profile) (objectstore.Store, error)

// Reconciler reconciles VolumeReplicationGroups. It holds its dependencies and the newest version
// it has seen of each group.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// Tenancy names the system namespaces, besides the defaults, that no group may protect.
	Tenancy tenancy.Rules
	// APIReader reads uncached: S3 profile Secrets (unless the cache shows one unchanged since
	// its store was built, stores.go), what a deletion releases (delete.go), and a group the
	// cache shows older than the agent's own last write to it (newest.Versions).
	APIReader client.Reader
	// Cache, when set, watches the metadata of the kinds a capture reads (kubeobjects.DefaultKinds
	// and Namespaces), so that a settled group's capture reads nothing (kubeobjects.go); nil
	// reads them from the API server every interval.
	Cache cache.Cache
	// Backends selects each PVC's replication backend.
	Backends *replication.Registry
	// NewStore builds the store of an S3 profile.
	NewStore StoreFactory
	// StoreLimits bound what the agent reads from a store; the zero value is the defaults.
	StoreLimits StoreLimits
	// Floor is the administrator's bound on every namespace a promotion restores into
	// (floor.go); the zero value is none.
	Floor NamespaceFloor
	// Fence is true when the agent serves the fence (internal/agent/webhook) and has installed
	// its configuration: a relocation demotes only behind it. False refuses to demote for a
	// relocation (FenceNotAvailable).
	Fence bool
	// ClusterName names this agent's cluster in the primary marker of the stores (epoch.go).
	ClusterName string
	// Recorder records the groups' transitions as events (events.go); nil records none.
	Recorder events.EventRecorder
	// Metrics counts the S3 writes (metrics.go); nil counts nothing.
	Metrics *Metrics
	// Workers is how many groups are reconciled at once; 0 means one.
	Workers int
	// Hooks runs the hooks of the groups' recipes (hooks.go); nil fails every hook with a
	// message saying so.
	Hooks *hooks.Runner
	// VolSyncKeyRecheck is how often the VolSync keys are compared with the stores
	// (volsync_keys.go); 0 is a minute. Tests shorten it.
	VolSyncKeyRecheck time.Duration

	// written remembers what each store holds of each group (ledger.go); SetupWithManager
	// makes it.
	written *ledger
	// stores are the stores built, reused while their Secrets do not change (stores.go).
	stores storeCache
	// versions is the newest version seen of each group: a pass woken by a pod, PVC or
	// VolumeReplication before the cache shows the agent's last annotation or status would
	// otherwise act on what it has already moved past.
	versions newest.Versions
	// namespaces is the newest version seen of each namespace the agent fenced or unfenced
	// (namespaceFenceInCache).
	namespaces newest.Versions
	// hookRuns are the hooks that run or ran in goroutines (hooks.go).
	hookRuns hookFlights
}

// Least privilege: every write is a patch, a create or delete of a VolumeReplication or a
// VolumeGroupReplication, or the create of a restored PV or PVC (never their deletion); pods and
// VolumeAttachments are only read; S3 profile Secrets are read one by one, uncached; the capture watches only the metadata of
// the kinds it reads, Secrets included (kubeobjects.go).
// +kubebuilder:rbac:groups=drover.io,resources=volumereplicationgroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=drover.io,resources=volumereplicationgroups/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumereplications,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumereplicationclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumegroupreplications,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumegroupreplicationclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumegroupreplicationcontents,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager validates the dependencies and registers the controller with its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("the VolumeReplicationGroup reconciler needs a Client")
	case r.APIReader == nil:
		return errors.New("the VolumeReplicationGroup reconciler needs an APIReader")
	case r.Backends == nil:
		return errors.New("the VolumeReplicationGroup reconciler needs a replication backend Registry")
	case r.NewStore == nil:
		return errors.New("the VolumeReplicationGroup reconciler needs a StoreFactory")
	case r.ClusterName == "":
		return errors.New("the VolumeReplicationGroup reconciler needs the name of its cluster")
	}
	if err := indexConsumers(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.written = newLedger()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("volumereplicationgroup").
		// A first-in first-out queue, not controller-runtime's priority queue: that one puts
		// the groups of the initial list (an agent restarted, a cluster back) behind every other
		// event, and 80 groups passing at each sync of their storage kept 20 demoted groups of
		// a returning cluster waiting over 10 minutes for their first pass (make bench, N = 100).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1), UsePriorityQueue: ptr.To(false)}).
		For(&v1alpha1.VolumeReplicationGroup{}, builder.WithPredicates(notOnlyStatusChanged())).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.pvcToVRGs)).
		Watches(&replicationv1alpha1.VolumeReplication{}, handler.EnqueueRequestsFromMapFunc(volumeReplicationToVRG),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: r.volumeReplicationChangeMatters})).
		Watches(&replicationv1alpha1.VolumeReplicationClass{}, handler.EnqueueRequestsFromMapFunc(r.replicationClassToVRGs)).
		Watches(&volsyncv1alpha1.ReplicationSource{}, handler.EnqueueRequestsFromMapFunc(volumeReplicationToVRG)).
		Watches(&volsyncv1alpha1.ReplicationDestination{}, handler.EnqueueRequestsFromMapFunc(volumeReplicationToVRG),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: r.destinationChangeMatters})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podToVRGs)).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(r.volumeAttachmentToVRGs))
	b = r.watchCreatedWorkloads(mgr, b)
	// A consistency group's VolumeGroupReplication carries its VolumeReplicationGroup's labels as a
	// VolumeReplication does. It is watched where the cluster serves it: a cluster whose
	// csi-addons has no group replication still runs the agent, and a group asked there is
	// refused (ConsistencyGroupUnsupported).
	vgr := schema.GroupKind{Group: replicationv1alpha1.GroupVersion.Group, Kind: "VolumeGroupReplication"}
	if _, err := mgr.GetRESTMapper().RESTMapping(vgr, replicationv1alpha1.GroupVersion.Version); err == nil {
		b = b.Watches(&replicationv1alpha1.VolumeGroupReplication{}, handler.EnqueueRequestsFromMapFunc(volumeReplicationToVRG)).
			Watches(&replicationv1alpha1.VolumeGroupReplicationClass{}, handler.EnqueueRequestsFromMapFunc(r.replicationClassToVRGs))
	}
	return b.Complete(r)
}

// Reconcile protects the PVCs of one VolumeReplicationGroup, or unprotects them when it is
// deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vrg := &v1alpha1.VolumeReplicationGroup{}
	if err := r.versions.Get(ctx, r.Client, r.APIReader, req.NamespacedName, vrg); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("replicationState", vrg.Spec.ReplicationState)
	ctx = ctrl.LoggerInto(ctx, log)

	if vrg.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(vrg, Finalizer) {
		before := vrg.DeepCopy()
		controllerutil.AddFinalizer(vrg, Finalizer)
		if err := r.Client.Patch(ctx, vrg, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer to VolumeReplicationGroup %s: %w", req.NamespacedName, err)
		}
		r.versions.Seen(vrg)
		return ctrl.Result{}, nil
	}

	sc := newScope(vrg)
	if !vrg.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, sc)
	}
	result, err := runPhases(ctx, sc, r.phases(vrg), r.Metrics.observePhase)
	began := time.Now()
	perr := r.patchStatus(ctx, sc, err == nil)
	r.Metrics.observePhase("status", time.Since(began))
	if perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if err != nil && onlyStoresDown(err) {
		log.V(1).Info("Retrying later: an S3 profile does not answer", "error", err.Error(), "after", requeueStoreDown)
		return ctrl.Result{RequeueAfter: requeueStoreDown}, nil
	}
	return result, err
}

// onlyStoresDown reports whether every error joined in err is an S3 profile that did not answer.
func onlyStoresDown(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyStoresDown(e) {
				return false
			}
		}
		return len(joined.Unwrap()) > 0
	}
	return objectstore.KindOf(err) == objectstore.KindUnreachable
}

// phases are the steps of a reconcile of a live group, chosen by the role it asks for. A primary
// promoted by a failover or a relocation restores its PVs and PVCs before protecting
// (restorePVCs does nothing otherwise); a secondary demotes what it finds and never writes
// metadata: the stores hold the primary's, under the same keys. A primary's last phase looks
// again, reading only, at the storage its PVCs waited for (lookAgain). Each phase is timed under
// its name (drover_vrg_phase_duration_seconds).
func (r *Reconciler) phases(vrg *v1alpha1.VolumeReplicationGroup) []namedPhase {
	if vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary {
		return []namedPhase{
			{"parseSpec", r.parseSpec}, {"selectPVCs", r.selectPVCs}, {"sourceHooks", r.sourceHooks}, {"removeWorkloads", r.removeWorkloads},
			{"prepareDemotions", r.prepareDemotions}, {"fenceRelocation", r.fenceRelocation}, {"demotePVCs", r.demotePVCs},
			{"continueVolSyncFinalSyncs", r.continueVolSyncFinalSyncs}, {"finishRelocation", r.finishRelocation},
			{"receiveVolSync", r.receiveVolSync}, {"publishVolSyncKeys", r.publishVolSyncKeys}, {"volSyncMovers", r.volSyncMovers},
		}
	}
	return []namedPhase{
		{"parseSpec", r.parseSpec}, {"fenceStores", r.fenceStores}, {"unfence", r.unfence}, {"ensureNamespaces", r.ensureNamespaces},
		{"restorePVCs", r.restorePVCs}, {"selectPVCs", r.selectPVCs}, {"fetchVolSyncKeys", r.fetchVolSyncKeys}, {"protectPVCs", r.protectPVCs},
		{"volSyncCycles", r.volSyncCycles},
		{"protectMetadata", r.protectMetadata}, {"protectKubeObjects", r.protectKubeObjects}, {"pointStores", r.pointStores},
		{"primaryVolSync", r.primaryVolSync},
		{"volSyncMovers", r.volSyncMovers}, {"checkWorkloads", r.checkWorkloads}, {"targetHooks", r.targetHooks}, {"lookAgain", r.lookAgain},
	}
}

// phase is one step of a reconcile. A phase that cannot go on returns an error or a requeue; the
// next phases run anyway when they can, so one broken PVC or store does not stop the rest.
type phase func(ctx context.Context, sc *scope) (ctrl.Result, error)

// namedPhase is a phase with the name its time is measured under.
type namedPhase struct {
	name string
	run  phase
}

// runPhases runs every phase, joins their errors and keeps the shortest requeue. A requeue is
// never returned together with an error. observe is told how long each phase took.
func runPhases(ctx context.Context, sc *scope, phases []namedPhase, observe func(string, time.Duration)) (ctrl.Result, error) {
	var errs []error
	result := ctrl.Result{}
	for _, p := range phases {
		began := time.Now()
		res, err := p.run(ctx, sc)
		observe(p.name, time.Since(began))
		if err != nil {
			errs = append(errs, err)
		}
		result = shortest(result, res)
		if sc.stop {
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// shortest returns the requeue that comes first; zero means none.
func shortest(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter <= b.RequeueAfter:
		return a
	default:
		return b
	}
}

// patchStatus computes the status from the scope and patches it when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, sc *scope, succeeded bool) error {
	computeStatus(sc, succeeded)
	// Recorded with the status the agent writes anyway: a new version costs one write per group.
	sc.vrg.Status.AgentVersion = version.Published()
	applyHookCondition(sc)
	applySyncHookCondition(sc)
	if equality.Semantic.DeepEqual(sc.before.Status, sc.vrg.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sc.vrg, client.MergeFrom(sc.before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch status of VolumeReplicationGroup %s: %w", klog.KObj(sc.vrg), err)
	}
	r.versions.Seen(sc.vrg)
	// Only a transition that was written is told: a failed patch is retried, and told then.
	r.recordTransitions(sc)
	return nil
}

// notOnlyStatusChanged drops the update events of a group whose status alone changed, mostly
// the agent's own status patches: each would cost a pass over every PVC and store for nothing.
// The same holds for the agent's bookkeeping annotations (bookkeeping). A change of spec
// (generation), labels, other annotations, finalizers or deletion still counts.
func notOnlyStatusChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!maps.Equal(withoutBookkeeping(o.GetAnnotations()), withoutBookkeeping(n.GetAnnotations()))
	}}
}

// bookkeeping are the annotations a pass writes on its group to remember what it did, and
// that no later pass waits for: the pass that writes one goes on with it set and returns its
// own requeue (the next capture an interval away, the claimed epoch's markers written in the
// same pass, the relocation's workloads removed after its final capture, the step of a restore
// order, whose pass requeues to look at the step it reached). The agent alone
// writes them. Each woke a whole pass for nothing: at 100 groups, one per group per capture
// that changed a store and one per promotion. AnnotationKubeObjectsRestored is not one (written
// once per promotion, its pass is the first to see the group restored).
var bookkeeping = []string{AnnotationKubeObjectsCapturedAt, AnnotationPrimaryEpoch, AnnotationKubeObjectsFinalCapture, AnnotationRestoreOrder}

// withoutBookkeeping returns the annotations without the bookkeeping ones (a copy when it has
// any).
func withoutBookkeeping(annotations map[string]string) map[string]string {
	if !slices.ContainsFunc(bookkeeping, func(k string) bool { _, ok := annotations[k]; return ok }) {
		return annotations
	}
	out := maps.Clone(annotations)
	for _, k := range bookkeeping {
		delete(out, k)
	}
	return out
}

// pvcToVRGs maps a PVC to the groups that select it or protect it.
func (r *Reconciler) pvcToVRGs(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.groupsOfPVC(ctx, obj, func(*v1alpha1.VolumeReplicationGroup) bool { return true })
}

// groupsOfPVC maps a PVC to the groups that select it or protect it, of those keep accepts.
func (r *Reconciler) groupsOfPVC(ctx context.Context, obj client.Object, keep func(*v1alpha1.VolumeReplicationGroup) bool) []reconcile.Request {
	vrgs := &v1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, vrgs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list VolumeReplicationGroups for a PVC", "pvc", klog.KObj(obj))
		return nil
	}
	var out []reconcile.Request
	for i := range vrgs.Items {
		vrg := &vrgs.Items[i]
		if !slices.Contains(protectedNamespaces(vrg), obj.GetNamespace()) {
			continue
		}
		selected := obj.GetLabels()[LabelProtectedBy] == vrg.Name
		if sel, err := pvcSelector(vrg); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			selected = true
		}
		if selected && keep(vrg) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: vrg.Namespace, Name: vrg.Name}})
		}
	}
	return out
}

// replicationClassToVRGs maps a VolumeReplicationClass (or a VolumeGroupReplicationClass) to
// every group, so that a PVC waiting for its class is protected as soon as someone creates it.
// Classes change rarely.
func (r *Reconciler) replicationClassToVRGs(ctx context.Context, obj client.Object) []reconcile.Request {
	vrgs := &v1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, vrgs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list VolumeReplicationGroups for a VolumeReplicationClass", "class", obj.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(vrgs.Items))
	for _, vrg := range vrgs.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: vrg.Namespace, Name: vrg.Name}})
	}
	return out
}

// volumeReplicationToVRG maps a VolumeReplication (or a VolSync object: the same labels) to the
// group its labels name.
func volumeReplicationToVRG(_ context.Context, obj client.Object) []reconcile.Request {
	name, ns := obj.GetLabels()[volrep.LabelVRGName], obj.GetLabels()[volrep.LabelVRGNamespace]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// labelledGroup reads, from the cache, the group a replication object's labels name (those of
// volumeReplicationToVRG); an error when it cannot, which the watches' predicates take as a
// reason to wake it.
func (r *Reconciler) labelledGroup(obj client.Object) (*v1alpha1.VolumeReplicationGroup, error) {
	vrg := &v1alpha1.VolumeReplicationGroup{}
	key := types.NamespacedName{Namespace: obj.GetLabels()[volrep.LabelVRGNamespace], Name: obj.GetLabels()[volrep.LabelVRGName]}
	return vrg, r.Client.Get(context.Background(), key, vrg)
}

// volumeReplicationChangeMatters reports whether an update of a VolumeReplication can change
// what its group's pass does or reports. One that only tells of another sync of a secondary
// image does not: a secondary's status leaves the syncs to the primary's group (withoutSyncs),
// and the storage's other news (its state, its conditions, a demotion observed) change more
// than the sync fields. Such an update came at every sync of every demoted PVC: at 100 groups
// after a failover, a pass per group per interval on the secondary's agent, in the queue the
// next action's passes wait in. csi-addons reports no sync of a secondary at all; for a storage
// that does, the one exception is a relocated group waiting for its final sync
// (finishRelocation), which such a storage's last sync can prove.
func (r *Reconciler) volumeReplicationChangeMatters(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*replicationv1alpha1.VolumeReplication)
	n, okNew := e.ObjectNew.(*replicationv1alpha1.VolumeReplication)
	if !okOld || !okNew || n.Spec.ReplicationState != replicationv1alpha1.Secondary || !onlySyncChanged(o, n) {
		return true
	}
	vrg, err := r.labelledGroup(n)
	if err != nil {
		return true
	}
	return awaitsFinalSync(vrg)
}

// destinationChangeMatters reports whether an update of a ReplicationDestination can change what
// its group's pass does or reports. A secondary's pass reads its destinations' address, not
// their syncs: an update that only tells of another received sync (its times, duration, latest
// image, the steps of its Synchronizing condition) wakes no secondary, but once per interval to
// record the point it holds (received.go). VolSync reports each sync
// in several updates (started, completed), for every PVC; the secondary's pass then read its key
// Secrets from the API server for nothing (five passes a second for one group in the lab, whose
// destinations receive continuously below a minute). A group asked to be primary is woken: its
// restore waits for a destination's latest image.
func (r *Reconciler) destinationChangeMatters(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*volsyncv1alpha1.ReplicationDestination)
	n, okNew := e.ObjectNew.(*volsyncv1alpha1.ReplicationDestination)
	if !okOld || !okNew || !onlyReceivedChanged(o, n) {
		return true
	}
	vrg, err := r.labelledGroup(n)
	if err != nil {
		return true
	}
	return vrg.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary || receivedPointDue(vrg, n)
}

// onlyReceivedChanged reports whether two versions of a ReplicationDestination differ only in
// what each received sync changes: its times, duration and latest image, and the Synchronizing
// condition while it reports no error (VolSync moves it through the steps of every sync).
func onlyReceivedChanged(o, n *volsyncv1alpha1.ReplicationDestination) bool {
	a, b := o.DeepCopy(), n.DeepCopy()
	for _, rd := range []*volsyncv1alpha1.ReplicationDestination{a, b} {
		rd.ResourceVersion, rd.ManagedFields = "", nil
		withoutReceivedMarks(rd)
		if st := rd.Status; st != nil {
			st.LastSyncTime, st.LastSyncStartTime, st.LastSyncDuration, st.LatestImage = nil, nil, nil, nil
			st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool {
				return c.Type == volsyncv1alpha1.ConditionSynchronizing && c.Reason != volsyncv1alpha1.SynchronizingReasonError
			})
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// onlySyncChanged reports whether two versions of a VolumeReplication differ in the last sync's
// time, duration and size alone.
func onlySyncChanged(o, n *replicationv1alpha1.VolumeReplication) bool {
	a, b := o.DeepCopy(), n.DeepCopy()
	for _, vr := range []*replicationv1alpha1.VolumeReplication{a, b} {
		vr.ResourceVersion, vr.ManagedFields = "", nil
		vr.Status.LastSyncTime, vr.Status.LastSyncDuration, vr.Status.LastSyncBytes = nil, nil, nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

// awaitsFinalSync reports whether a group was asked for a relocation's final sync that its
// status does not record yet.
func awaitsFinalSync(vrg *v1alpha1.VolumeReplicationGroup) bool {
	request := vrg.Spec.FinalSyncRequest
	return request != "" && (vrg.Status.FinalSync == nil || vrg.Status.FinalSync.Request != request)
}
