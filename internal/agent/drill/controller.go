package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/tenancy"
)

const (
	// Finalizer holds a DrillSandbox until everything it made is removed.
	Finalizer = "drover.io/drill-sandbox"
	// LabelDrill marks what a drill made, its namespaces and snapshot contents, with the drill's
	// ID as its value.
	LabelDrill = "drover.io/drill"
	// AnnotationSandbox on what a drill made names its DrillSandbox (<namespace>/<name>).
	AnnotationSandbox = "drover.io/drill-sandbox"
	// fieldOwner is the drill's field manager.
	fieldOwner = "drover-drill"

	// requeueWaiting is how soon a sandbox waiting on storage or workloads is looked at again.
	requeueWaiting = 2 * time.Second
)

// Reconciler reconciles DrillSandboxes. It holds only dependencies.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache: the kinds a sandbox reads once (workloads, snapshot
	// contents, the check Job) need no informer of their own.
	APIReader client.Reader
	// NewStore builds the S3 stores the captures are read from; StoreLimits bound the reads.
	NewStore    vrg.StoreFactory
	StoreLimits vrg.StoreLimits
	// Tenancy are the admin and system namespaces besides the defaults: a sandbox copies only
	// a group that may protect what it names (vrg.NamespaceProblem).
	Tenancy tenancy.Rules
	// Quota is the hard limits of each sandbox namespace's ResourceQuota; nil means DefaultQuota.
	Quota corev1.ResourceList
	// DNS is whom the sandbox's pods may ask names of: the cluster's DNS; zero means DefaultDNS.
	DNS DNSPeer
}

// +kubebuilder:rbac:groups=drover.io,resources=drillsandboxes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=drover.io,resources=drillsandboxes/status,verbs=get;patch
// +kubebuilder:rbac:groups=drover.io,resources=drillsandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups=drover.io,resources=volumereplicationgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotcontents,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=volsync.backube,resources=replicationdestinations,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create
// The check's log tail is read from its pods' status (their termination messages), never from
// their logs: no pods/log.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;escalate;bind

// SetupWithManager registers the reconciler, after checking its dependencies.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil || r.NewStore == nil {
		return errors.New("the DrillSandbox reconciler needs a client, an API reader and a store factory")
	}
	return ctrl.NewControllerManagedBy(mgr).Named("drillsandbox").For(&v1alpha1.DrillSandbox{}).Complete(r)
}

// scope is what one pass of one sandbox knows.
type scope struct {
	sandbox *v1alpha1.DrillSandbox
	group   *v1alpha1.VolumeReplicationGroup
	// namespaces map each protected namespace to its sandbox.
	namespaces map[string]string
	// level is the least Pod Security level of the sandbox namespaces: the spec's, raised to a
	// protected namespace's once its capture is read.
	level api.Level
	now   time.Time
}

// phase is one step of building a sandbox: a non-zero result or an error stops the pass there.
type phase func(context.Context, *scope) (ctrl.Result, error)

// Reconcile builds, or tears down, one sandbox.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	sb := &v1alpha1.DrillSandbox{}
	if err := r.Client.Get(ctx, req.NamespacedName, sb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sb.DeletionTimestamp.IsZero() {
		return r.teardown(ctx, sb)
	}
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		patch := client.MergeFrom(sb.DeepCopy())
		controllerutil.AddFinalizer(sb, Finalizer)
		return ctrl.Result{}, r.Client.Patch(ctx, sb, patch, client.FieldOwner(fieldOwner))
	}
	if sb.Status.Result != "" {
		return ctrl.Result{}, nil // built and judged: kept as it is until the hub deletes it
	}
	before := sb.DeepCopy()
	sc := &scope{sandbox: sb, now: time.Now(), level: sandboxLevel(sb)}
	defer func() {
		if reterr == nil {
			sb.Status.ObservedGeneration = sb.Generation
		}
		if err := r.patchStatus(ctx, before, sb); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	for _, p := range []phase{r.loadGroup, r.ensureNamespaces, r.isolate, r.decideMode, r.copyVolumes, r.restoreObjects, r.awaitWorkloads, r.runCheck} {
		res, err := p(ctx, sc)
		if err != nil || !res.IsZero() || sb.Status.Result != "" {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// patchStatus writes the sandbox's status when a pass changed it.
func (r *Reconciler) patchStatus(ctx context.Context, before, sb *v1alpha1.DrillSandbox) error {
	if equality.Semantic.DeepEqual(before.Status, sb.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sb, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to patch status of DrillSandbox %s: %w", klog.KObj(sb), err)
	}
	return nil
}

// loadGroup reads the group the sandbox copies: it must exist and be this cluster's secondary.
func (r *Reconciler) loadGroup(ctx context.Context, sc *scope) (ctrl.Result, error) {
	group := &v1alpha1.VolumeReplicationGroup{}
	key := client.ObjectKey{Namespace: sc.sandbox.Namespace, Name: sc.sandbox.Spec.VRGName}
	err := r.Client.Get(ctx, key, group)
	if apierrors.IsNotFound(err) {
		// The cache may not have seen yet a group created just before its sandbox: a drill
		// fails for good, so only the API server's answer says the group is not there.
		err = r.APIReader.Get(ctx, key, group)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			sc.fail(StepCopyingVolumes, fmt.Sprintf("VolumeReplicationGroup %s does not exist on this cluster: a drill runs where the application's secondary is", key))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("failed to get VolumeReplicationGroup %s: %w", key, err)
	}
	if group.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		sc.fail(StepCopyingVolumes, fmt.Sprintf("VolumeReplicationGroup %s is %s here: a drill runs on the secondary, never beside the running application", key, group.Spec.ReplicationState))
		return ctrl.Result{}, nil
	}
	// Whoever may create a DrillSandbox in a namespace (the hub's credential) must not copy the
	// data of an application of another: the group is judged by the rule of its own reconciler.
	if msg, err := vrg.NamespaceProblem(ctx, r.APIReader, r.Tenancy, group); err != nil || msg != "" {
		if err == nil {
			sc.fail(StepCopyingVolumes, fmt.Sprintf("VolumeReplicationGroup %s may not be drilled: %s", key, msg))
		}
		return ctrl.Result{}, err
	}
	sc.group = group
	sc.namespaces = map[string]string{}
	sc.sandbox.Status.Namespaces = nil
	for _, ns := range vrg.ProtectedNamespaces(group) {
		name := SandboxNamespace(ns, sc.sandbox.Spec.DrillID)
		sc.namespaces[ns] = name
		sc.sandbox.Status.Namespaces = append(sc.sandbox.Status.Namespaces, v1alpha1.DrillSandboxNamespace{Source: ns, Sandbox: name})
	}
	return ctrl.Result{}, nil
}

// SandboxNamespace is the sandbox of protected namespace ns in drill id.
func SandboxNamespace(ns, id string) string { return ns + "-drill-" + id }

// sandboxKey names a sandbox in the annotations of what it made.
func sandboxKey(sb *v1alpha1.DrillSandbox) string { return sb.Namespace + "/" + sb.Name }
