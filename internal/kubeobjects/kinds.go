package kubeobjects

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Tier is a step of the restore; lower tiers are created first.
type Tier int

// The restore's tiers, in order.
const (
	// TierNamespace: the protected namespaces themselves.
	TierNamespace Tier = iota
	// TierConfig: ServiceAccounts, Roles, RoleBindings, ConfigMaps and Secrets, which workloads
	// and Services refer to.
	TierConfig
	// TierService: Services, so the DNS names exist before the workloads start.
	TierService
	// TierOther: other kinds of Kubernetes' own API groups (policies, ingresses, autoscalers).
	TierOther
	// TierCustom: custom resources, which may drive operators that create workloads.
	TierCustom
	// TierWorkload: Deployments, StatefulSets, DaemonSets, Jobs and CronJobs, last, so they
	// start with everything they use in place (their PVCs are restored and Bound before any of
	// this runs).
	TierWorkload
)

// Well-known kinds.
var (
	KindNamespace  = schema.GroupKind{Kind: "Namespace"}
	KindService    = schema.GroupKind{Kind: "Service"}
	KindSecret     = schema.GroupKind{Kind: "Secret"}
	KindConfigMap  = schema.GroupKind{Kind: "ConfigMap"}
	KindSA         = schema.GroupKind{Kind: "ServiceAccount"}
	KindJob        = schema.GroupKind{Group: "batch", Kind: "Job"}
	KindCronJob    = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	KindDeployment = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	KindSTS        = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	KindDaemonSet  = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	KindRole       = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}
	KindRoleBind   = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}
)

// WorkloadKinds are the kinds that run pods: restored last, and removed from a demoted old
// primary so its pods release the PVCs.
var WorkloadKinds = []schema.GroupKind{KindDeployment, KindSTS, KindDaemonSet, KindJob, KindCronJob}

// DefaultKinds are the kinds captured when includedKinds is empty: the namespaced kinds of
// Kubernetes' own API groups that make up an application. Custom resources are captured only
// when includedKinds names them: a namespace holds many that controllers own (snapshots,
// replication objects, drover's own), and restoring those would be wrong.
var DefaultKinds = []schema.GroupKind{
	KindSA, KindRole, KindRoleBind, KindConfigMap, KindSecret,
	KindService,
	{Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
	{Group: "networking.k8s.io", Kind: "Ingress"},
	KindDeployment, KindSTS, KindDaemonSet, KindJob, KindCronJob,
}

// neverKinds are never captured, even when includedKinds names them: the volume path owns PVCs
// and PVs, controllers derive the others from what is captured, and Namespaces are captured
// apart (always, for the protected namespaces).
var neverKinds = []schema.GroupKind{
	{Kind: "PersistentVolumeClaim"}, {Kind: "PersistentVolume"}, {Kind: "Pod"}, {Kind: "Endpoints"},
	{Kind: "Event"}, {Kind: "Binding"}, KindNamespace,
	{Group: "apps", Kind: "ReplicaSet"}, {Group: "apps", Kind: "ControllerRevision"},
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}, {Group: "events.k8s.io", Kind: "Event"},
	{Group: "coordination.k8s.io", Kind: "Lease"}, {Group: "storage.k8s.io", Kind: "CSIStorageCapacity"},
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"},
}

// neverGroups are API groups whose kinds are never captured: drover's own and those of the
// replication backends and snapshots, which the volume path creates on each cluster.
var neverGroups = []string{
	v1alpha1.GroupVersion.Group, "replication.storage.openshift.io", "volsync.backube", "snapshot.storage.k8s.io",
}

// builtinGroups are Kubernetes' own API groups; kinds of other groups are custom resources.
var builtinGroups = []string{
	"", "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "rbac.authorization.k8s.io",
	"discovery.k8s.io", "events.k8s.io", "coordination.k8s.io", "storage.k8s.io", "scheduling.k8s.io",
	"node.k8s.io", "resource.k8s.io", "authorization.k8s.io", "authentication.k8s.io",
	"certificates.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
	"apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io",
	"storagemigration.k8s.io",
}

// ParseKind parses a kind as the spec writes it: Kind for the core group, Kind.group otherwise.
func ParseKind(s string) schema.GroupKind {
	kind, group, _ := strings.Cut(s, ".")
	return schema.GroupKind{Group: group, Kind: kind}
}

// KindString writes a kind as the spec does.
func KindString(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// Never reports whether a kind is never captured, whatever the spec says.
func Never(gk schema.GroupKind) bool {
	return slices.Contains(neverKinds, gk) || slices.Contains(neverGroups, gk.Group)
}

// IsWorkload reports whether a kind runs pods.
func IsWorkload(gk schema.GroupKind) bool { return slices.Contains(WorkloadKinds, gk) }

// TierOf is the restore tier of a kind.
func TierOf(gk schema.GroupKind) Tier {
	switch gk {
	case KindNamespace:
		return TierNamespace
	case KindSA, KindRole, KindRoleBind, KindConfigMap, KindSecret:
		return TierConfig
	case KindService:
		return TierService
	}
	switch {
	case IsWorkload(gk):
		return TierWorkload
	case slices.Contains(builtinGroups, gk.Group):
		return TierOther
	default:
		return TierCustom
	}
}

// compareKinds orders kinds by tier, then group and kind.
func compareKinds(a, b schema.GroupKind) int {
	return cmp.Or(cmp.Compare(TierOf(a), TierOf(b)), strings.Compare(a.Group, b.Group), strings.Compare(a.Kind, b.Kind))
}

// Selection is what a group's kubeObjectProtection captures: kinds in restore order and a label
// selector of objects.
type Selection struct {
	// Kinds are the kinds to capture, sorted by tier.
	Kinds []schema.GroupKind
	// Selector selects the objects by label; Everything when the spec has none.
	Selector labels.Selector
}

// NewSelection builds the selection of a KubeObjectProtectionSpec: includedKinds or DefaultKinds,
// less excludedKinds, with objectSelector. A kind that is never captured in includedKinds, or an
// invalid selector, is an error whose message says what to change.
func NewSelection(spec *v1alpha1.KubeObjectProtectionSpec) (Selection, error) {
	kinds := DefaultKinds
	var errs []error
	if len(spec.IncludedKinds) > 0 {
		kinds = nil
		for _, s := range spec.IncludedKinds {
			gk := ParseKind(s)
			if Never(gk) {
				errs = append(errs, fmt.Errorf("spec.kubeObjectProtection.includedKinds names %s, which drover never captures (PVCs and PVs are restored by the volume path; pods, replica sets, endpoints, events, leases and controller revisions are derived by controllers; drover's and the replication backends' own kinds exist on each cluster): remove it", s))
				continue
			}
			if !slices.Contains(kinds, gk) {
				kinds = append(kinds, gk)
			}
		}
	}
	var excluded []schema.GroupKind
	for _, s := range spec.ExcludedKinds {
		excluded = append(excluded, ParseKind(s))
	}
	sel := Selection{Selector: labels.Everything()}
	for _, gk := range kinds {
		if !slices.Contains(excluded, gk) {
			sel.Kinds = append(sel.Kinds, gk)
		}
	}
	slices.SortStableFunc(sel.Kinds, compareKinds)
	if spec.ObjectSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(spec.ObjectSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.kubeObjectProtection.objectSelector is invalid: %w", err))
		} else {
			sel.Selector = s
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Selection{}, err
	}
	return sel, nil
}

// Workloads returns the selected kinds that run pods.
func (s Selection) Workloads() Selection {
	out := Selection{Selector: s.Selector}
	for _, gk := range s.Kinds {
		if IsWorkload(gk) {
			out.Kinds = append(out.Kinds, gk)
		}
	}
	return out
}

// Resource is a kind as the API server serves it.
type Resource struct {
	// GVK is the kind at the version the API server prefers.
	GVK schema.GroupVersionKind
}

// Resolve maps the selected kinds to the versions the API server prefers, through the
// RESTMapper (discovery). A kind the API server does not serve (a custom resource whose CRD is
// not installed here) is returned in notServed: there is nothing of it to capture or delete. A
// cluster-scoped kind is an error: only namespaced objects are captured.
func (s Selection) Resolve(mapper meta.RESTMapper) (resources []Resource, notServed []string, err error) {
	var errs []error
	for _, gk := range s.Kinds {
		m, err := mapper.RESTMapping(gk)
		switch {
		case meta.IsNoMatchError(err):
			notServed = append(notServed, KindString(gk))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to find the API resource of kind %s: %w", KindString(gk), err))
			continue
		case m.Scope.Name() != meta.RESTScopeNameNamespace:
			errs = append(errs, fmt.Errorf("kind %s is cluster-scoped: drover captures only namespaced objects; remove it from spec.kubeObjectProtection.includedKinds", KindString(gk)))
			continue
		}
		resources = append(resources, Resource{GVK: m.GroupVersionKind})
	}
	return resources, notServed, errors.Join(errs...)
}
