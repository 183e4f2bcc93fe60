package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/tenancy"
)

// validate checks what the API server cannot, or may not have: the DRPlacementControl may
// protect what it names (tenancyProblem), the policy exists, may be named from its namespace
// (tenancy.Rules.PolicyProblem) and is Validated, the clusters the
// spec names belong to it, and no older DRPlacementControl protects the same namespaces.
// A problem sets Validated False and sc.invalid; nothing is done until it is fixed.
func (r *Reconciler) validate(ctx context.Context, sc *scope) error {
	drpc := sc.drpc
	if reason, msg := r.tenancyProblem(drpc); reason != "" {
		return sc.invalidate(reason, msg)
	}
	if reason, msg, err := r.placementProblem(ctx, drpc); err != nil || reason != "" {
		if err != nil {
			return err
		}
		return sc.invalidate(reason, msg)
	}
	if msg, err := r.namespaceConflict(ctx, drpc); err != nil || msg != "" {
		if err != nil {
			return err
		}
		return sc.invalidate(v1alpha1.ReasonNamespaceConflict, msg)
	}
	policy := &v1alpha1.DRPolicy{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: drpc.Spec.DRPolicyRef.Name}, policy)
	switch {
	case apierrors.IsNotFound(err):
		return sc.invalidate(v1alpha1.ReasonNotFound, fmt.Sprintf("DRPolicy %s does not exist: create it, or delete this DRPlacementControl", drpc.Spec.DRPolicyRef.Name))
	case err != nil:
		return fmt.Errorf("failed to get DRPolicy %s: %w", drpc.Spec.DRPolicyRef.Name, err)
	}
	sc.policy = policy
	if msg := r.Tenancy.PolicyProblem(drpc.Namespace, policy.Name, policy.Annotations, policy.Spec.VolSyncMovers == v1alpha1.VolSyncMoversPrivileged); msg != "" {
		return sc.invalidate(v1alpha1.ReasonPolicyNotAllowed, msg)
	}
	if c := apimeta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionValidated); c == nil || c.Status != metav1.ConditionTrue {
		msg := "not checked yet"
		if c != nil {
			msg = c.Message
		}
		return sc.invalidate(v1alpha1.ReasonPolicyNotValidated, fmt.Sprintf("DRPolicy %s is not Validated: %s", policy.Name, msg))
	}
	if sc.interval, err = policy.Spec.SchedulingInterval.Duration(); err != nil {
		return sc.invalidate(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("DRPolicy %s: %v", policy.Name, err))
	}
	for field, cluster := range map[string]string{"preferredCluster": drpc.Spec.PreferredCluster, "failoverCluster": drpc.Spec.FailoverCluster} {
		if cluster != "" && !slices.Contains(policy.Spec.DRClusters, cluster) {
			return sc.invalidate(v1alpha1.ReasonClusterNotInPolicy, fmt.Sprintf("spec.%s %s is not one of the clusters of DRPolicy %s (%s): name one of them",
				field, cluster, policy.Name, strings.Join(policy.Spec.DRClusters, ", ")))
		}
	}
	if drpc.Status.CurrentPrimary == "" && drpc.Spec.PreferredCluster == "" && drpc.Spec.Action != v1alpha1.ActionFailover {
		return sc.invalidate(v1alpha1.ReasonInvalidSpec, "spec.preferredCluster is empty and the application is not protected yet: name the cluster where it runs")
	}
	if err := r.steerPlacement(ctx, sc); err != nil || sc.invalid {
		return err
	}
	sc.argoNames, sc.lost, sc.leftBehind = map[string]string{}, map[string]string{}, map[string]bool{}
	sc.drclusters = map[string]v1alpha1.DRClusterSpec{}
	for _, name := range policy.Spec.DRClusters {
		drc := &v1alpha1.DRCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, drc); err != nil {
			return fmt.Errorf("failed to get DRCluster %s: %w", name, err)
		}
		sc.argoNames[name] = drc.Spec.ArgoCDClusterName
		sc.drclusters[name] = drc.Spec
		if drc.Spec.Lost != nil {
			sc.lost[name] = drc.Spec.Lost.Reason
		}
		sc.leftBehind[name] = slices.ContainsFunc(drc.Status.GroupsToRemove, func(g v1alpha1.GroupRef) bool {
			return g.Namespace == drpc.Namespace && g.Name == drpc.Name
		})
	}
	sc.setCondition(v1alpha1.ConditionValidated, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the policy is Validated and the spec names its clusters")
	return nil
}

// invalidate records why the spec cannot be acted on.
func (sc *scope) invalidate(reason, message string) error {
	sc.invalid = true
	sc.setCondition(v1alpha1.ConditionValidated, metav1.ConditionFalse, reason, message)
	return nil
}

// protectedNamespaces are the namespaces whose PVCs a DRPlacementControl protects.
func protectedNamespaces(drpc *v1alpha1.DRPlacementControl) []string {
	if len(drpc.Spec.ProtectedNamespaces) > 0 {
		return drpc.Spec.ProtectedNamespaces
	}
	return []string{drpc.Namespace}
}

// tenancyProblem returns why the DRPlacementControl may not protect the namespaces it names, as
// a reason and a message; empty when it may. These are the rules of the hub's admission policy
// (config/hub/tenancy_policy.yaml, internal/tenancy), checked again because admission may
// not have run: the policy not installed, or the object created before it.
func (r *Reconciler) tenancyProblem(drpc *v1alpha1.DRPlacementControl) (reason, message string) {
	if ns := r.Tenancy.FirstSystem(protectedNamespaces(drpc)); ns != "" {
		return v1alpha1.ReasonSystemNamespace, tenancy.SystemNamespaceMessage(ns)
	}
	if r.Tenancy.IsAdmin(drpc.Namespace) {
		return "", ""
	}
	for _, ns := range drpc.Spec.ProtectedNamespaces {
		if ns != drpc.Namespace {
			return v1alpha1.ReasonNamespaceNotAllowed, fmt.Sprintf("spec.protectedNamespaces names namespace %s, but a DRPlacementControl in %s may protect only %s: "+
				"create a DRPlacementControl in %s, or ask an administrator to protect both from an admin namespace (%s, or one of the hub's --admin-namespaces)",
				ns, drpc.Namespace, drpc.Namespace, ns, tenancy.DefaultAdminNamespace)
		}
	}
	return "", ""
}

// placementProblem returns why the DRPlacementControl may not steer the Placement it names; empty
// when it may: the Placement is in its namespace, or it is in an admin namespace, or an
// administrator labelled its namespace tenancy.LabelPlacementNamespace with the Placement's.
func (r *Reconciler) placementProblem(ctx context.Context, drpc *v1alpha1.DRPlacementControl) (reason, message string, err error) {
	ref := drpc.Spec.PlacementRef
	if ref == nil || ref.Namespace == "" || ref.Namespace == drpc.Namespace || r.Tenancy.IsAdmin(drpc.Namespace) {
		return "", "", nil
	}
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader // the hub does not watch Namespaces; this read is rare
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: drpc.Namespace}, ns); err != nil {
		return "", "", fmt.Errorf("failed to get namespace %s: %w", drpc.Namespace, err)
	}
	if ns.Labels[tenancy.LabelPlacementNamespace] == ref.Namespace {
		return "", "", nil
	}
	return v1alpha1.ReasonNamespaceNotAllowed, fmt.Sprintf("spec.placementRef names Placement %s/%s, but a DRPlacementControl in %s may steer only a Placement of %s: "+
		"create the DRPlacementControl in %s, or ask an administrator to label namespace %s %s=%s (a GitOps tool's namespace), or to create it in an admin namespace",
		ref.Namespace, ref.Name, drpc.Namespace, drpc.Namespace, ref.Namespace, drpc.Namespace, tenancy.LabelPlacementNamespace, ref.Namespace), nil
}

// namespaceConflict names the older DRPlacementControl that already protects one of the
// namespaces of this one; empty when there is none. The oldest wins, by creation time then UID,
// so that every DRPlacementControl decides the same whichever the hub reconciles first. Only
// DRPlacementControls that may protect what they name count (tenancyProblem): one that may
// not squats nothing; one that may can neither be edited into another's namespaces
// (protectedNamespaces is immutable) nor lose its own to a younger one.
//
// The owner of each namespace is read from the hub's index of claims (owners.go), in O(1), and
// never from the API server: a refused DRPlacementControl, looked at again every
// requeueInvalid, costs nothing but that. The index has seen every DRPlacementControl that the
// informer delivered before this one, so one created just before it is never missed; an index
// that has not seen this one yet makes the reconcile try again.
func (r *Reconciler) namespaceConflict(ctx context.Context, drpc *v1alpha1.DRPlacementControl) (string, error) {
	if r.owners == nil {
		return r.listedConflict(ctx, drpc)
	}
	me := claimOf(drpc)
	for _, ns := range protectedNamespaces(drpc) {
		owner, known := r.owners.ownerOf(ns, me.key)
		if !known {
			return "", fmt.Errorf("failed to find the owner of namespace %s: the hub has not indexed DRPlacementControl %s yet", ns, me.key)
		}
		if owner.key != me.key {
			return conflictMessage(ns, owner.key), nil
		}
	}
	return "", nil
}

// conflictMessage says that namespace ns is protected by the older DRPlacementControl other.
func conflictMessage(ns string, other types.NamespacedName) string {
	return fmt.Sprintf("namespace %s is already protected by DRPlacementControl %s/%s, created before this one: protect each namespace with one DRPlacementControl",
		ns, other.Namespace, other.Name)
}

// listedConflict is namespaceConflict for a Reconciler set up without a manager (unit tests):
// it lists, from Client, the DRPlacementControls of the namespaces that can hold one protecting
// this one's (its own, and the admin namespaces).
func (r *Reconciler) listedConflict(ctx context.Context, drpc *v1alpha1.DRPlacementControl) (string, error) {
	var reader client.Reader = r.Client
	list := &v1alpha1.DRPlacementControlList{}
	namespaces := append(append([]string{tenancy.DefaultAdminNamespace}, r.Tenancy.AdminNamespaces...), protectedNamespaces(drpc)...)
	slices.Sort(namespaces)
	for _, ns := range slices.Compact(namespaces) {
		in := &v1alpha1.DRPlacementControlList{}
		if err := reader.List(ctx, in, client.InNamespace(ns)); err != nil {
			return "", fmt.Errorf("failed to list DRPlacementControls in namespace %s: %w", ns, err)
		}
		list.Items = append(list.Items, in.Items...)
	}
	mine := protectedNamespaces(drpc)
	for i := range list.Items {
		other := &list.Items[i]
		if (other.Namespace == drpc.Namespace && other.Name == drpc.Name) || !older(other, drpc) {
			continue
		}
		if reason, _ := r.tenancyProblem(other); reason != "" {
			continue
		}
		for _, ns := range protectedNamespaces(other) {
			if slices.Contains(mine, ns) {
				return conflictMessage(ns, client.ObjectKeyFromObject(other)), nil
			}
		}
	}
	return "", nil
}

// older orders DRPlacementControls by creation, then by UID: an order every reconcile agrees
// on, whichever it sees first.
func older(a, b *v1alpha1.DRPlacementControl) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}

// observe reads the application's group on each cluster of the policy. A cluster that cannot be
// read is recorded as unreachable with its error; that is not an error of the reconcile.
func (r *Reconciler) observe(ctx context.Context, sc *scope) {
	for _, name := range sc.policy.Spec.DRClusters {
		cv := &clusterView{name: name}
		sc.clusters[name] = cv
		if sc.leftBehind[name] {
			cv.err = fmt.Errorf("%s still holds the group of an earlier DRPlacementControl %s/%s, left when it was deleted while %s was lost; the hub demotes and removes that group first",
				name, sc.drpc.Namespace, sc.drpc.Name, name)
			continue
		}
		cl, err := r.Gateway.Client(ctx, name)
		if err != nil {
			cv.err = err
			continue
		}
		cv.client = cl
		vrg := &v1alpha1.VolumeReplicationGroup{}
		err = cl.Get(ctx, client.ObjectKey{Namespace: sc.drpc.Namespace, Name: sc.drpc.Name}, vrg)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			cv.err = fmt.Errorf("failed to get VolumeReplicationGroup %s/%s: %w", sc.drpc.Namespace, sc.drpc.Name, err)
		default:
			cv.vrg = vrg
		}
	}
}
