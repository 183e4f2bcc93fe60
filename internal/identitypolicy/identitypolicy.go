// Package identitypolicy checks that the ValidatingAdmissionPolicies bounding drover's
// identities on a managed cluster are in place. RBAC alone lets the agent's ServiceAccount
// create pods, webhooks and Roles anywhere, and the hub's credential create Secrets anywhere;
// the policies drover-agent-identity (the agent's release manifests) and
// drover-hub-on-managed-cluster (`drover cluster join`) narrow them to what drover does
// (docs/security.md). A policy or its binding deleted, by mistake or by an attacker who may,
// silently reopens those paths: the agent refuses to start without them and `drover validate
// clusters` fails, each saying which is missing.
package identitypolicy

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// AgentIdentity bounds the agent's ServiceAccount (config/agent/base/identity_policy.yaml).
	AgentIdentity = "drover-agent-identity"
	// AgentRBAC bounds where the agent's ServiceAccount writes Roles and RoleBindings (the same
	// file).
	AgentRBAC = "drover-agent-rbac"
	// HubOnManagedCluster bounds the hub's credential
	// (config/rbac/hub-on-managed-cluster/admission_policy.yaml).
	HubOnManagedCluster = "drover-hub-on-managed-cluster"
	// HubRoleBinding is the ClusterRoleBinding `drover cluster join` gives the hub's
	// credential on a managed cluster (config/rbac/hub-on-managed-cluster): while it exists,
	// HubOnManagedCluster must too. (A ServiceAccount drover-system/drover-hub says nothing: the
	// hub's own Deployment runs as one, on the hub cluster, which may be a managed one too.)
	HubRoleBinding = "drover-hub-on-managed-cluster"
)

// Missing returns, one line each, the policies and bindings that must be on the cluster and are
// not: AgentIdentity and AgentRBAC always, HubOnManagedCluster while HubRoleBinding exists
// (the cluster is joined). An error is a read that failed for another reason than NotFound.
func Missing(ctx context.Context, cl client.Reader) ([]string, error) {
	err := cl.Get(ctx, client.ObjectKey{Name: HubRoleBinding}, &rbacv1.ClusterRoleBinding{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("failed to get ClusterRoleBinding %s, the hub's credential's: %w", HubRoleBinding, err)
	}
	return MissingOnJoined(ctx, cl, err == nil)
}

// MissingOnJoined is Missing for a cluster known to be joined (the hub's credential reads it)
// or not.
func MissingOnJoined(ctx context.Context, cl client.Reader, joined bool) ([]string, error) {
	names := []string{AgentIdentity, AgentRBAC}
	if joined {
		names = append(names, HubOnManagedCluster)
	}
	var missing []string
	for _, name := range names {
		for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
			err := cl.Get(ctx, client.ObjectKey{Name: name}, obj)
			kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
			switch {
			case apierrors.IsNotFound(err):
				missing = append(missing, fmt.Sprintf("%s %s (%s)", kind, name, why(name)))
			case err != nil:
				return nil, fmt.Errorf("failed to get %s %s: %w", kind, name, err)
			}
		}
	}
	return missing, nil
}

// why says what a missing policy leaves open and how to restore it.
func why(name string) string {
	switch name {
	case AgentRBAC:
		return "it keeps the agent's ServiceAccount from writing Roles and RoleBindings outside the namespaces it protects; apply drover's agent release manifests again"
	case AgentIdentity:
		return "it keeps the agent's ServiceAccount from creating running pods, webhooks and Roles beyond what the agent does; apply drover's agent release manifests again"
	}
	return "it keeps the hub's credential from writing Secrets and groups beyond what the hub does; run `drover cluster join` for this cluster again"
}

// Check returns an error naming every missing policy and binding, or nil.
func Check(ctx context.Context, cl client.Reader) error {
	missing, err := Missing(ctx, cl)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing on this cluster: %s", strings.Join(missing, "; "))
	}
	return nil
}
