package join

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeconfig"
)

const (
	installHubHint   = "install the hub first: kubectl apply --server-side -f dist/drover-hub.yaml"
	installAgentHint = "install the agent first: kubectl apply --server-side -f dist/drover-agent.yaml"
	// hubRoleBindingName is the ClusterRoleBinding of config/rbac/hub-on-managed-cluster.
	hubRoleBindingName = "drover-hub-on-managed-cluster"
)

var vrgKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "VolumeReplicationGroup"}

// access is one permission join needs.
type access struct {
	group, resource, verb, namespace string
}

// preflight checks everything join can check before writing: both clusters reachable with
// accepted credentials allowed to do what join does, drover installed on both, the name free or
// joined to the same server, the managed cluster not joined under another name. It reports
// whether the namespace exists on the hub and on the managed cluster.
func preflight(ctx context.Context, o Options, hub, managed *target) (hubNS, managedNS bool, err error) {
	if err := checkManagedInstalled(managed); err != nil {
		return false, false, err
	}
	if err := checkHubDRCluster(ctx, o, hub); err != nil {
		return false, false, err
	}
	if err := checkNotJoinedElsewhere(ctx, o, managed); err != nil {
		return false, false, err
	}
	if hubNS, err = namespaceExists(ctx, hub, o.Namespace); err != nil {
		return false, false, err
	}
	if managedNS, err = namespaceExists(ctx, managed, o.Namespace); err != nil {
		return false, false, err
	}
	if err := checkAccess(ctx, hub, hubAccess(o.Namespace, hubNS)); err != nil {
		return false, false, err
	}
	if err := checkAccess(ctx, managed, managedAccess(o.Namespace, managedNS)); err != nil {
		return false, false, err
	}
	return hubNS, managedNS, nil
}

// checkManagedInstalled proves the managed cluster reachable, the credentials accepted and the
// VolumeReplicationGroup CRD served.
func checkManagedInstalled(managed *target) error {
	if _, err := managed.cl.RESTMapper().RESTMapping(vrgKind); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("drover's VolumeReplicationGroup CRD is not installed on %s at %s: %s", managed.role, managed.host, installAgentHint)
		}
		return fmt.Errorf("failed to check drover's CRDs on %s: %w", managed.role, managed.explain(err))
	}
	return nil
}

// checkHubDRCluster proves the hub reachable and drover's DRCluster CRD served, and refuses a
// name that is joined to another server or was not created by join.
func checkHubDRCluster(ctx context.Context, o Options, hub *target) error {
	drc := &v1alpha1.DRCluster{}
	err := hub.cl.Get(ctx, client.ObjectKey{Name: o.Name}, drc)
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("drover's DRCluster CRD is not installed on the hub at %s: %s", hub.host, installHubHint)
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get DRCluster %s on the hub: %w", o.Name, hub.explain(err))
	}
	if drc.Labels[LabelManagedBy] != ManagedByValue {
		return fmt.Errorf("DRCluster %s already exists on the hub and was not created by drover cluster join (it has no label %s=%s): delete it (kubectl delete drcluster %s) or join under another name",
			o.Name, LabelManagedBy, ManagedByValue, o.Name)
	}
	server, err := joinedServer(ctx, hub, drc)
	if err != nil || server == "" || sameServer(server, o.Server) {
		return err
	}
	return fmt.Errorf("cluster %s is already joined with server %s, not %s: to move the name to the new server run `drover cluster unjoin %s` first, or join this cluster under another name",
		o.Name, server, o.Server, o.Name)
}

// joinedServer returns the server of the kubeconfig Secret a DRCluster names, or "" when the
// Secret is gone.
func joinedServer(ctx context.Context, hub *target, drc *v1alpha1.DRCluster) (string, error) {
	ref := drc.Spec.KubeconfigSecretRef
	secret := &corev1.Secret{}
	if err := hub.cl.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("failed to get Secret %s/%s of DRCluster %s: %w", ref.Namespace, ref.Name, drc.Name, hub.explain(err))
	}
	cfg, err := kubeconfig.FromSecret(secret)
	if err != nil {
		return "", nil //nolint:nilerr // an unusable (or refused) kubeconfig is replaced by join
	}
	return cfg.Host, nil
}

func sameServer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// checkNotJoinedElsewhere refuses a managed cluster that join bound to the hub under another
// name: the hub would then drive the same cluster as two DRClusters.
func checkNotJoinedElsewhere(ctx context.Context, o Options, managed *target) error {
	crb := &rbacv1.ClusterRoleBinding{}
	err := managed.cl.Get(ctx, client.ObjectKey{Name: hubRoleBindingName}, crb)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to get ClusterRoleBinding %s on %s: %w", hubRoleBindingName, managed.role, managed.explain(err))
	}
	if other := crb.Labels[LabelCluster]; other != "" && other != o.Name {
		return fmt.Errorf("the cluster at %s is already joined as %s: run `drover cluster unjoin %s` first, or join it under the name %s",
			managed.host, other, other, other)
	}
	return nil
}

func namespaceExists(ctx context.Context, t *target, name string) (bool, error) {
	err := t.cl.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("failed to get namespace %s on %s: %w", name, t.role, t.explain(err))
}

func hubAccess(ns string, nsExists bool) []access {
	a := []access{
		{"", "secrets", "create", ns}, {"", "secrets", "patch", ns}, {"", "secrets", "delete", ns},
		{v1alpha1.GroupVersion.Group, "drclusters", "create", ""}, {v1alpha1.GroupVersion.Group, "drclusters", "patch", ""},
	}
	if !nsExists {
		a = append(a, access{"", "namespaces", "create", ""})
	}
	return a
}

func managedAccess(ns string, nsExists bool) []access {
	a := []access{
		{"", "serviceaccounts", "create", ns}, {"", "serviceaccounts", "patch", ns},
		{"", "secrets", "create", ns}, {"", "secrets", "patch", ns}, {"", "secrets", "delete", ns},
		{"", "configmaps", "create", ns}, {"", "configmaps", "patch", ns},
		{rbacv1.GroupName, "clusterroles", "create", ""}, {rbacv1.GroupName, "clusterroles", "patch", ""},
		{rbacv1.GroupName, "clusterrolebindings", "create", ""}, {rbacv1.GroupName, "clusterrolebindings", "patch", ""},
		{rbacv1.GroupName, "roles", "create", ns}, {rbacv1.GroupName, "roles", "patch", ns},
		{rbacv1.GroupName, "rolebindings", "create", ns}, {rbacv1.GroupName, "rolebindings", "patch", ns},
	}
	if !nsExists {
		a = append(a, access{"", "namespaces", "create", ""})
	}
	return a
}

// checkAccess asks the API server whether the user may do everything in want, and names every
// permission it lacks.
func checkAccess(ctx context.Context, t *target, want []access) error {
	var missing []string
	for _, a := range want {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: a.group, Resource: a.resource, Verb: a.verb, Namespace: a.namespace},
		}}
		if err := t.cl.Create(ctx, review); err != nil {
			return fmt.Errorf("failed to review the permissions on %s: %w", t.role, t.explain(err))
		}
		if !review.Status.Allowed {
			res := a.resource
			if a.namespace != "" {
				res += " in namespace " + a.namespace
			}
			missing = append(missing, a.verb+" "+res)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s at %s refused the user of %s (403 Forbidden): it may not %s; use a kubeconfig whose user may (cluster-admin)",
		t.role, t.host, t.source, strings.Join(missing, ", "))
}
