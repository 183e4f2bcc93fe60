package drpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
)

const fieldOwner = "drover-hub"

// Reconciler reconciles DRPolicies. It holds only dependencies.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=drover.io,resources=drpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=drover.io,resources=drpolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=drover.io,resources=drclusters,verbs=get;list;watch

// SetupWithManager registers the controller; a DRCluster's change re-validates its policies.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("the DRPolicy reconciler needs a Client")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("drpolicy").
		For(&v1alpha1.DRPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.DRCluster{}, handler.EnqueueRequestsFromMapFunc(r.drclusterToDRPolicies)).
		Complete(r)
}

// Reconcile validates one DRPolicy.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	policy := &v1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := policy.DeepCopy()
	clusters := map[string]*v1alpha1.DRCluster{}
	for _, name := range policy.Spec.DRClusters {
		drc := &v1alpha1.DRCluster{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, drc)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("failed to get DRCluster %s of DRPolicy %s: %w", name, policy.Name, err)
		default:
			clusters[name] = drc
		}
	}
	c := ValidatedCondition(policy, clusters)
	c.ObservedGeneration = policy.Generation
	apimeta.SetStatusCondition(&policy.Status.Conditions, c)
	policy.Status.ObservedGeneration = policy.Generation
	if equality.Semantic.DeepEqual(before.Status, policy.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Status().Patch(ctx, policy, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to patch status of DRPolicy %s: %w", policy.Name, err)
	}
	return ctrl.Result{}, nil
}

// ValidatedCondition judges a policy from its clusters, found by name (a missing one is absent).
// A cluster declared lost (spec.lost) need not be Validated: it may have no kubeconfig on this
// hub at all (a hub restored while it did not answer, docs/decisions/0018), and nothing waits
// for it or targets it while it is declared. The other cluster must be Validated, and both S3
// profiles defined: the applications run on it, writing to every profile.
func ValidatedCondition(policy *v1alpha1.DRPolicy, clusters map[string]*v1alpha1.DRCluster) metav1.Condition {
	var problems, lost []string
	reason := v1alpha1.ReasonSucceeded
	for _, name := range policy.Spec.DRClusters {
		drc, ok := clusters[name]
		if !ok {
			reason = v1alpha1.ReasonClusterNotValidated
			problems = append(problems, fmt.Sprintf("DRCluster %s does not exist: join the cluster (drover cluster join), or, on a hub being restored, run drover hub restore again once the cluster answers", name))
			continue
		}
		if drc.Spec.Lost != nil {
			lost = append(lost, name)
		} else if v := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionValidated); v == nil || v.Status != metav1.ConditionTrue {
			reason = v1alpha1.ReasonClusterNotValidated
			msg := "not checked yet"
			if v != nil {
				msg = v.Message
			}
			problems = append(problems, fmt.Sprintf("DRCluster %s is not Validated: %s", name, msg))
		}
		if !slices.ContainsFunc(policy.Spec.S3Profiles, func(p v1alpha1.S3Profile) bool { return p.Name == drc.Spec.S3ProfileName }) {
			if reason == v1alpha1.ReasonSucceeded {
				reason = v1alpha1.ReasonNoS3Profile
			}
			problems = append(problems, fmt.Sprintf("DRCluster %s names S3 profile %q, which spec.s3Profiles does not define: add it", name, drc.Spec.S3ProfileName))
		}
	}
	if len(lost) == len(policy.Spec.DRClusters) {
		reason = v1alpha1.ReasonClusterNotValidated
		problems = append(problems, fmt.Sprintf("both clusters are declared lost (%s): no application can run under this policy; lift the declaration of the one that answers", strings.Join(lost, ", ")))
	}
	if len(problems) > 0 {
		return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: reason, Message: strings.Join(problems, "; ")}
	}
	msg := "both clusters are Validated and their S3 profiles are defined"
	if len(lost) == 1 {
		msg = fmt.Sprintf("DRCluster %s is declared lost (its Fenced condition says why), so it need not be Validated: applications run on its peer, nothing waits for %s and no action may target it until the declaration is lifted; "+
			"the peer is Validated and both S3 profiles are defined", lost[0], lost[0])
	}
	return metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: msg}
}

// drclusterToDRPolicies maps a DRCluster to the policies that pair it.
func (r *Reconciler) drclusterToDRPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha1.DRPolicyList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DRPolicies for a DRCluster", "cluster", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if slices.Contains(p.Spec.DRClusters, obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}
