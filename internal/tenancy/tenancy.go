// Package tenancy says who may protect what: a DRPlacementControl protects its own namespace;
// one in an admin namespace may protect others; no DRPlacementControl or
// VolumeReplicationGroup protects a system namespace. The hub's release manifests hold the same
// rules as a ValidatingAdmissionPolicy (config/hub/tenancy_policy.yaml); the hub and the agents
// check them again, with the namespaces their flags add, because admission can be bypassed (a
// policy not installed, objects created before it) and because an agent trusts no hub's
// judgement about its own system namespaces.
package tenancy

import (
	"fmt"
	"slices"
	"strings"
)

// LabelAdminNamespace is the label that, set to "true" on a Namespace, makes it an admin namespace for the
// admission policy; the hub's --admin-namespaces must name it too.
const LabelAdminNamespace = "drover.io/admin-namespace"

// LabelHooks is the label that, set to HooksEnabled on a Namespace of a managed cluster, lets
// the agent run the hooks of an application's recipe there (exec into its pods, Jobs, scales
// and checks). The recipe comes through the hub, whose credential may write any group's spec;
// that credential may not set this label (the admission policy drover-hub-on-managed-cluster),
// so whoever administers the namespace on the cluster decides whether drover may act inside it.
const LabelHooks = "drover.io/hooks"

// HooksEnabled is LabelHooks' value that lets hooks run.
const HooksEnabled = "enabled"

// LabelPlacementNamespace on a Namespace names the one other namespace whose Placements the
// DRPlacementControls of that namespace may name in spec.placementRef: a GitOps tool's, such as
// argocd, whose ApplicationSets read their PlacementDecisions there. Only whoever may edit
// Namespaces sets it; the admission policy and the hub both read it.
const LabelPlacementNamespace = "drover.io/placement-namespace"

// LabelDrillPodSecurity on a Namespace of the hub, set to "baseline", lets the DRDrills of that
// namespace run their sandboxes at Pod Security baseline rather than restricted (a protected
// namespace that enforces more still gives its sandbox its own level). Only whoever may edit
// Namespaces sets it; a tenant with DRDrill rights cannot.
const LabelDrillPodSecurity = "drover.io/drill-pod-security"

// AnnotationTenantNamespaces on a DRPolicy lists, comma-separated, the namespaces whose
// DRPlacementControls may name the policy besides the admin namespaces. A policy without it may
// be named from every namespace, unless it asks for privileged VolSync movers: such a policy may
// be named from admin namespaces only, whatever the annotation says, since its movers run as
// root in the protected namespaces. Only whoever may edit DRPolicies (the hub's administrator)
// sets it.
const AnnotationTenantNamespaces = "drover.io/tenant-namespaces"

// DefaultAdminNamespace is the namespace whose DRPlacementControls may protect any
// non-system namespace: drover's own.
const DefaultAdminNamespace = "drover-system"

// systemPrefixes and systemNamespaces are never protected: the cluster's own components
// (CoreDNS, the CNI, the API server's leases), OpenShift's, and drover's agent. Failing over a
// system namespace would delete its workloads on the old primary.
var (
	systemPrefixes   = []string{"kube-", "openshift-"}
	systemNamespaces = []string{DefaultAdminNamespace}
)

// Rules are the namespaces a hub or an agent was told of besides the defaults.
type Rules struct {
	// AdminNamespaces are namespaces, besides DefaultAdminNamespace, whose DRPlacementControls
	// may protect other namespaces.
	AdminNamespaces []string
	// SystemNamespaces are namespaces, besides kube-*, openshift-* and drover-system, that are
	// never protected.
	SystemNamespaces []string
}

// IsAdmin says whether DRPlacementControls (on the hub) or VolumeReplicationGroups (on a managed
// cluster, where a Namespace labelled LabelAdminNamespace=true is one too) in ns may protect
// other namespaces.
func (r Rules) IsAdmin(ns string) bool {
	return ns == DefaultAdminNamespace || slices.Contains(r.AdminNamespaces, ns)
}

// IsSystem says whether ns is never protected.
func (r Rules) IsSystem(ns string) bool {
	for _, p := range systemPrefixes {
		if strings.HasPrefix(ns, p) {
			return true
		}
	}
	return slices.Contains(systemNamespaces, ns) || slices.Contains(r.SystemNamespaces, ns)
}

// FirstSystem returns the first of namespaces that is a system namespace; empty when none is.
func (r Rules) FirstSystem(namespaces []string) string {
	for _, ns := range namespaces {
		if r.IsSystem(ns) {
			return ns
		}
	}
	return ""
}

// SystemNamespaceMessage says why ns is not protected, and what to do.
func SystemNamespaceMessage(ns string) string {
	return fmt.Sprintf("namespace %s is a system namespace (kube-*, openshift-*, drover-system, or one named by --system-namespaces), "+
		"which drover never protects: a failover would delete its workloads on the old primary; protect the application's own namespaces", ns)
}

// ForeignNamespaceMessage says why a VolumeReplicationGroup in namespace own may not protect the
// namespaces foreign on a managed cluster, and what to do.
func ForeignNamespaceMessage(own string, foreign []string) string {
	return fmt.Sprintf("the group protects namespace %s, not its own namespace %s, which is not an admin namespace of this cluster: "+
		"a group protects other namespaces only from %s, one of the agent's --admin-namespaces, or a namespace an administrator of "+
		"this cluster labelled; protect the application from a group in its own namespace, or label namespace %s %s=true",
		strings.Join(foreign, ", "), own, DefaultAdminNamespace, own, LabelAdminNamespace)
}

// PolicyProblem says why a DRPlacementControl in namespace ns may not name the DRPolicy policy,
// whose annotations and privileged movers (volSyncMovers Privileged) are given; empty when it
// may. An admin namespace may name any policy.
func (r Rules) PolicyProblem(ns, policy string, annotations map[string]string, privileged bool) string {
	if r.IsAdmin(ns) {
		return ""
	}
	if privileged {
		return fmt.Sprintf("DRPolicy %s asks for privileged VolSync movers (volSyncMovers Privileged), which run as root in the protected namespaces: "+
			"only a DRPlacementControl in an admin namespace (%s, or one of the hub's --admin-namespaces) may name it; name a policy with unprivileged movers, "+
			"or ask an administrator to protect the application from an admin namespace", policy, DefaultAdminNamespace)
	}
	listed, ok := annotations[AnnotationTenantNamespaces]
	if !ok {
		return ""
	}
	for _, n := range strings.Split(listed, ",") {
		if strings.TrimSpace(n) == ns {
			return ""
		}
	}
	return fmt.Sprintf("DRPolicy %s may be named only from the namespaces its administrator listed in its annotation %s (%s), not from %s: "+
		"name another policy, or ask an administrator to add %s to the list", policy, AnnotationTenantNamespaces, listed, ns, ns)
}
