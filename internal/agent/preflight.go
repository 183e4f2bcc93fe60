package agent

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/identitypolicy"
)

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get,resourceNames=drover-hub-on-managed-cluster
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=drover-agent-identity;drover-agent-rbac;drover-hub-on-managed-cluster

// Preflight refuses to start the agent while an admission policy that bounds an identity on
// its cluster is missing (identitypolicy.Missing): without drover-agent-identity, the agent's
// ServiceAccount may create running pods, webhooks and Roles anywhere its RBAC reaches; without
// drover-hub-on-managed-cluster on a joined cluster (join's ClusterRoleBinding exists), the hub's credential may write any Secret.
// `drover agent` runs it before its manager; the error names each missing object and what
// restores it.
func Preflight(ctx context.Context, cfg *rest.Config) error {
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("failed to create a client of the cluster: %w", err)
	}
	if err := identitypolicy.Check(ctx, cl); err != nil {
		return fmt.Errorf("the agent refuses to start: %w", err)
	}
	return nil
}
