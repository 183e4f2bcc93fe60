package drcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/version"
)

// fieldOwner names the hub in managedFields.
const fieldOwner = "drover-hub"

// probeRetry is how often a cluster whose probe fails is probed again (the probe interval when
// that is shorter): the hub notices a returning cluster within about a second, and the
// applications waiting for it are woken by the gateway then, not at their next poll. Probing a
// cluster that does not answer costs that cluster nothing.
const probeRetry = time.Second

// workers is how many DRClusters are probed at once, so one cluster that holds a probe until
// its timeout does not delay the others'.
const workers = 4

// Reconciler reconciles DRClusters. It holds only dependencies.
type Reconciler struct {
	// Client reads and writes DRClusters on the hub.
	Client client.Client
	// Gateway gives a client of each managed cluster.
	Gateway gateway.Gateway
	// Health remembers since when each cluster's probe fails.
	Health *gateway.Health
	// ProbeInterval is how often a cluster is probed.
	ProbeInterval time.Duration
	// UnreachableAfter is the grace period: Reachable turns False only once the probe has been
	// failing this long.
	UnreachableAfter time.Duration
	// Recorder records ClusterReachable and ClusterUnreachable events; nil records none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=drover.io,resources=drclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=drclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager validates the dependencies and registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("the DRCluster reconciler needs a Client")
	case r.Gateway == nil:
		return errors.New("the DRCluster reconciler needs a Gateway")
	case r.Health == nil:
		return errors.New("the DRCluster reconciler needs a Health")
	case r.ProbeInterval <= 0 || r.UnreachableAfter <= 0:
		return errors.New("the DRCluster reconciler needs a positive ProbeInterval and UnreachableAfter")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("drcluster").
		// A fixed kubeconfig Secret is noticed at the next probe; watching Secrets would need
		// the hub to list every Secret of the hub cluster.
		For(&v1alpha1.DRCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile validates one DRCluster and probes it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	drc := &v1alpha1.DRCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, drc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Gateway.Forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := drc.DeepCopy()
	now := time.Now()

	cred := r.renewToken(ctx, drc.Name, now)
	cl, err := r.Gateway.Probe(ctx, drc.Name)
	failingSince := r.Health.Observe(drc.Name, err, now)
	setCondition(drc, validatedCondition(drc, err))
	setCondition(drc, reachableCondition(drc.Name, err, failingSince, now, r.UnreachableAfter, cred))
	if err == nil && len(drc.Status.GroupsToRemove) > 0 {
		r.removeLeftGroups(ctx, drc, cl)
	}
	setCondition(drc, fencedCondition(drc, err))
	drc.Status.ObservedGeneration = drc.Generation
	// Recorded with the status the hub writes anyway: a new version costs one write per cluster.
	drc.Status.HubVersion = version.Published()
	r.recordTransition(before, drc)
	r.recordLostTransition(before, drc)

	if !equality.Semantic.DeepEqual(before.Status, drc.Status) {
		// Optimistic: a DRPlacementControl being deleted may add to status.groupsToRemove.
		if perr := r.Client.Status().Patch(ctx, drc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); perr != nil {
			return ctrl.Result{}, fmt.Errorf("failed to patch status of DRCluster %s: %w", drc.Name, perr)
		}
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Probe failed", "cluster", klog.KObj(drc), "error", err.Error())
		return ctrl.Result{RequeueAfter: min(r.ProbeInterval, probeRetry)}, nil
	}
	return ctrl.Result{RequeueAfter: r.ProbeInterval}, nil
}

// recordTransition records an event when Reachable changed status.
func (r *Reconciler) recordTransition(before, after *v1alpha1.DRCluster) {
	if r.Recorder == nil {
		return
	}
	was := apimeta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionReachable)
	is := apimeta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionReachable)
	if is == nil || (was != nil && was.Status == is.Status) {
		return
	}
	switch is.Status {
	case metav1.ConditionTrue:
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, v1alpha1.EventClusterReachable, "Probe", "Cluster %s is reachable", after.Name)
	case metav1.ConditionFalse:
		r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, v1alpha1.EventClusterUnreachable, "Probe", "Cluster %s is unreachable: %s", after.Name, is.Message)
	}
}

// validatedCondition is Validated: True once the cluster answered a probe with a usable
// kubeconfig. It stays True while the cluster is only unreachable (it was validated), and turns
// False when the kubeconfig itself is unusable.
func validatedCondition(drc *v1alpha1.DRCluster, probeErr error) metav1.Condition {
	prev := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionValidated)
	switch {
	case errors.Is(probeErr, gateway.ErrNoKubeconfig) && drc.Spec.Lost != nil:
		return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoKubeconfig,
			Message: probeErr.Error() + "; expected while the cluster is declared lost and not joined to this hub: " + rejoinLost(drc) +
				"; meanwhile the DRPolicies pairing it are Validated without it"}
	case errors.Is(probeErr, gateway.ErrNoKubeconfig):
		return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoKubeconfig,
			Message: probeErr.Error() + "; create the Secret named by spec.kubeconfigSecretRef with the cluster's kubeconfig under key \"kubeconfig\""}
	case probeErr == nil:
		return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: "the kubeconfig works and the cluster serves drover's API"}
	case prev != nil && prev.Status == metav1.ConditionTrue && prev.ObservedGeneration == drc.Generation:
		return *prev
	default:
		return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNeverReachable,
			Message: fmt.Sprintf("the cluster has not answered once yet: %v; check that its API server is up, that the kubeconfig points at it and that drover's CRDs are installed there", probeErr)}
	}
}

// credential is where the hub's token for a cluster stands after this reconcile's renewal.
type credential struct {
	token gateway.Token
	// renewErr is why renewing the token failed; nil when it was not due or succeeded.
	renewErr error
}

// renewToken renews the cluster's expiring token when it is due (gateway.Secrets.RenewToken).
func (r *Reconciler) renewToken(ctx context.Context, cluster string, now time.Time) credential {
	tok, err := r.Gateway.RenewToken(ctx, cluster, now)
	log := ctrl.LoggerFrom(ctx)
	switch {
	case err != nil:
		log.Info("Renewing the hub's token failed", "cluster", cluster, "error", err.Error())
	case tok.Renewed:
		log.Info("Renewed the hub's token", "cluster", cluster, "expires", tok.Claims.Expires.UTC())
	}
	return credential{token: tok, renewErr: err}
}

// reachableCondition is Reachable: True while the probe succeeds and during the grace period
// after it starts failing (reason ProbeFailing), False after. A cluster that refuses the hub's
// token because it expired is False at once (CredentialExpired); one that refuses it otherwise
// is CredentialRefused after the grace period. Both say to join the cluster again.
func reachableCondition(cluster string, probeErr error, failingSince, now time.Time, grace time.Duration, cred credential) metav1.Condition {
	tok, unauthorized := cred.token, apierrors.IsUnauthorized(probeErr)
	rejoin := fmt.Sprintf("run `drover cluster join %s` again to issue the hub a new token", cluster)
	switch {
	case probeErr == nil:
		msg := "the cluster answers the hub's probe"
		if cred.renewErr != nil {
			msg += fmt.Sprintf("; the hub's token expires at %s and renewing it failed (retried at every probe): %v",
				tok.Claims.Expires.UTC().Format(time.RFC3339), cred.renewErr)
		}
		return metav1.Condition{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: msg}
	case unauthorized && tok.Expiring() && !now.Before(tok.Claims.Expires):
		msg := fmt.Sprintf("the hub's token for this cluster (ServiceAccount %s/%s) expired at %s and was not renewed: %s; the probe: %v",
			tok.Claims.Namespace, tok.Claims.ServiceAccount, tok.Claims.Expires.UTC().Format(time.RFC3339), rejoin, probeErr)
		if cred.renewErr != nil {
			msg += fmt.Sprintf("; the last renewal: %v", cred.renewErr)
		}
		return metav1.Condition{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCredentialExpired, Message: msg}
	case now.Sub(failingSince) < grace:
		return metav1.Condition{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProbeFailing,
			Message: fmt.Sprintf("the probe has failed since %s (grace period %s): %v", failingSince.UTC().Format(time.TimeOnly), grace, probeErr)}
	case unauthorized:
		return metav1.Condition{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCredentialRefused,
			Message: fmt.Sprintf("the cluster has refused the hub's credential (401 Unauthorized) since %s: it was revoked (its ServiceAccount or the Secret its token is bound to deleted) or is not this cluster's: %s; the probe: %v",
				failingSince.UTC().Format(time.TimeOnly), rejoin, probeErr)}
	default:
		return metav1.Condition{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnreachable,
			Message: fmt.Sprintf("unreachable since %s: %v", failingSince.UTC().Format(time.TimeOnly), probeErr)}
	}
}

// setCondition sets a condition stamped with the DRCluster's generation.
func setCondition(drc *v1alpha1.DRCluster, c metav1.Condition) {
	c.ObservedGeneration = drc.Generation
	apimeta.SetStatusCondition(&drc.Status.Conditions, c)
}
