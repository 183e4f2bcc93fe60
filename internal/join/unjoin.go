package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// UnjoinOptions are the inputs of Unjoin.
type UnjoinOptions struct {
	// Name is the DRCluster to remove.
	Name string
	// Hub is the hub cluster. Managed is the cluster to clean; without a Config only the hub's
	// side is removed (a cluster that is lost for good), and the report lists what stays there.
	Hub, Managed Cluster
	// Namespace is where join created its namespaced objects; empty means DefaultNamespace.
	Namespace string
	// Force removes the cluster even while DRPolicies pair it, and a DRCluster that join did
	// not create.
	Force bool
	// DryRun makes the checks and deletes with the API servers' dry run (nothing is persisted),
	// reporting what would be deleted.
	DryRun bool
	// Out receives the report; nil means os.Stdout.
	Out io.Writer
}

// RefusedError is an unjoin its checks refused: nothing was deleted.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// deleteOpts are the options of every delete; deleted is how the report says it.
func (o UnjoinOptions) deleteOpts() ([]client.DeleteOption, string) {
	if o.DryRun {
		return []client.DeleteOption{client.DryRunAll}, "would be deleted (dry run)"
	}
	return nil, "deleted"
}

var (
	secretGVK             = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	serviceAccountGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	configMapGVK          = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	clusterRoleBindingGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
	clusterRoleGVK        = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	roleBindingGVK        = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
	roleGVK               = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}
	policyGVK             = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}
	policyBindingGVK      = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}
)

// Unjoin removes what Join created for o.Name: on the hub the DRCluster and its Secrets, on the
// managed cluster (when given) the hub's bindings, roles, ServiceAccount, the Secret its tokens
// are bound to and the S3 Secrets: deleting those two revokes every token the hub held. It refuses while a DRPolicy pairs the cluster, unless o.Force.
func Unjoin(ctx context.Context, o UnjoinOptions) error {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Hub.Config == nil {
		return errors.New("no kubeconfig for the hub cluster: pass --hub-kubeconfig or set KUBECONFIG")
	}
	hub, err := newTarget("the hub", o.Hub)
	if err != nil {
		return err
	}
	var managed *target
	if o.Managed.Config != nil {
		if managed, err = newTarget("managed cluster "+o.Name, o.Managed); err != nil {
			return err
		}
	}
	if err := unjoinChecks(ctx, o, hub, managed); err != nil {
		return err
	}
	if err := deleteHubSide(ctx, o, hub); err != nil {
		return err
	}
	if o.DryRun {
		if managed != nil {
			if err := deleteManagedSide(ctx, o, managed); err != nil {
				return err
			}
		}
		fmt.Fprintf(o.Out, "Dry run: nothing was changed.\n")
		return nil
	}
	if managed == nil {
		fmt.Fprintf(o.Out, "The hub's side is removed. On cluster %s, what join created stays; remove it there with:\n"+
			"  kubectl delete clusterrolebinding,clusterrole -l %s=%s\n  kubectl -n %s delete rolebinding,role,serviceaccount,secret -l %s=%s\n",
			o.Name, LabelCluster, o.Name, o.Namespace, LabelCluster, o.Name)
		return nil
	}
	if err := deleteManagedSide(ctx, o, managed); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Cluster %s is unjoined. Copies of its S3 profile's Secret on the other joined clusters stay (the hub's credential may not delete Secrets); remove them there if no policy uses the profile.\n", o.Name)
	return nil
}

// unjoinChecks refuses while DRPolicies pair the cluster, or when the DRCluster was not made by
// join, and proves the managed cluster reachable, before anything is deleted.
func unjoinChecks(ctx context.Context, o UnjoinOptions, hub, managed *target) error {
	policies := &v1alpha1.DRPolicyList{}
	if err := hub.cl.List(ctx, policies); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("drover's DRPolicy CRD is not installed on the hub at %s: is this the hub?", hub.host)
		}
		return fmt.Errorf("failed to list DRPolicies on the hub: %w", hub.explain(err))
	}
	var pairing []string
	for _, p := range policies.Items {
		for _, c := range p.Spec.DRClusters {
			if c == o.Name {
				pairing = append(pairing, p.Name)
			}
		}
	}
	if len(pairing) > 0 && !o.Force {
		return &RefusedError{fmt.Errorf("DRPolicy %s pairs cluster %s: unprotect or move its applications, delete the policy (kubectl delete drpolicy %s), then unjoin; or pass --force to unjoin anyway",
			strings.Join(pairing, ", "), o.Name, strings.Join(pairing, " "))}
	}
	drc := &v1alpha1.DRCluster{}
	err := hub.cl.Get(ctx, client.ObjectKey{Name: o.Name}, drc)
	switch {
	case err == nil && drc.Labels[LabelManagedBy] != ManagedByValue && !o.Force:
		return &RefusedError{fmt.Errorf("DRCluster %s was not created by drover cluster join: delete it with kubectl, or pass --force", o.Name)}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to get DRCluster %s on the hub: %w", o.Name, hub.explain(err))
	}
	if managed != nil {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(clusterRoleBindingGVK)
		if err := managed.cl.List(ctx, list, client.MatchingLabels{LabelCluster: o.Name}); err != nil {
			return fmt.Errorf("failed to look for what join created on %s (omit --cluster-kubeconfig to remove only the hub's side): %w",
				managed.role, managed.explain(err))
		}
	}
	return nil
}

func deleteHubSide(ctx context.Context, o UnjoinOptions, hub *target) error {
	drc := &v1alpha1.DRCluster{}
	drc.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRCluster"))
	drc.SetName(o.Name)
	opts, deleted := o.deleteOpts()
	if err := hub.cl.Delete(ctx, drc, opts...); err == nil {
		fmt.Fprintf(o.Out, "%s: %s %s\n", hub.role, describe(drc), deleted)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete DRCluster %s on the hub: %w", o.Name, hub.explain(err))
	}
	return deleteLabelled(ctx, o, hub, secretGVK, o.Namespace)
}

func deleteManagedSide(ctx context.Context, o UnjoinOptions, managed *target) error {
	for _, k := range []struct {
		gvk schema.GroupVersionKind
		ns  string
	}{{clusterRoleBindingGVK, ""}, {clusterRoleGVK, ""}, {roleBindingGVK, o.Namespace}, {roleGVK, o.Namespace}, {policyBindingGVK, ""}, {policyGVK, ""}, {secretGVK, o.Namespace}, {serviceAccountGVK, o.Namespace}, {configMapGVK, o.Namespace}} {
		if err := deleteLabelled(ctx, o, managed, k.gvk, k.ns); err != nil {
			return err
		}
	}
	return nil
}

// deleteLabelled deletes the objects of one kind that join created for o.Name on t.
func deleteLabelled(ctx context.Context, o UnjoinOptions, t *target, gvk schema.GroupVersionKind, ns string) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk)
	sel := client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelCluster: o.Name}
	if err := t.cl.List(ctx, list, sel, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("failed to list the %ss join created on %s: %w", gvk.Kind, t.role, t.explain(err))
	}
	opts, deleted := o.deleteOpts()
	for i := range list.Items {
		obj := &list.Items[i]
		if err := t.cl.Delete(ctx, obj, opts...); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete %s on %s: %w", describe(obj), t.role, t.explain(err))
		}
		fmt.Fprintf(o.Out, "%s: %s %s\n", t.role, describe(obj), deleted)
	}
	return nil
}
