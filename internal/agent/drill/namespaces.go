package drill

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/podsecurity"
)

// Names of what bounds each sandbox namespace.
const (
	// IsolationPolicy names the NetworkPolicy that isolates each sandbox namespace.
	IsolationPolicy = "drover-drill-isolation"
	// SandboxQuota names the ResourceQuota of each sandbox namespace, SandboxLimits its
	// LimitRange.
	SandboxQuota  = "drover-drill-quota"
	SandboxLimits = "drover-drill-limits"
)

// sandboxLevel is the least Pod Security level the spec asks for its namespaces: restricted
// unless it says baseline (an administrator's choice, which the hub copies), never less.
func sandboxLevel(sb *v1alpha1.DrillSandbox) api.Level {
	if sb.Spec.PodSecurity == v1alpha1.DrillPodSecurityBaseline {
		return podsecurity.Baseline
	}
	return podsecurity.Restricted
}

// ensureNamespaces creates the sandbox namespaces, labelled with the drill's ID and enforcing
// the sandbox's Pod Security level. A namespace of that name that the drill did not make fails
// the drill: it is never taken over.
func (r *Reconciler) ensureNamespaces(ctx context.Context, sc *scope) (ctrl.Result, error) {
	sc.step(StepCopyingVolumes)
	for _, source := range slices.Sorted(maps.Keys(sc.namespaces)) {
		name := sc.namespaces[source]
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			sc.fail(StepCopyingVolumes, fmt.Sprintf("the sandbox of namespace %s would be %s, not a valid namespace name (%s): drill an application whose namespaces are shorter", source, name, errs[0]))
			return ctrl.Result{}, nil
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{LabelDrill: sc.sandbox.Spec.DrillID,
				podsecurity.LabelEnforce: string(sc.level), podsecurity.LabelEnforceVersion: api.VersionLatest},
			Annotations: map[string]string{AnnotationSandbox: sandboxKey(sc.sandbox)},
		}}
		err := r.Client.Create(ctx, ns, client.FieldOwner(fieldOwner))
		if apierrors.IsAlreadyExists(err) {
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
				return ctrl.Result{}, fmt.Errorf("failed to get namespace %s: %w", name, err)
			}
			if ns.Annotations[AnnotationSandbox] != sandboxKey(sc.sandbox) {
				sc.fail(StepCopyingVolumes, fmt.Sprintf("namespace %s exists and is not this drill's: delete it, or drill again (another ID)", name))
				return ctrl.Result{}, nil
			}
			if ns.DeletionTimestamp != nil {
				sc.waiting(StepCopyingVolumes, fmt.Sprintf("namespace %s is being deleted", name))
				return ctrl.Result{RequeueAfter: requeueWaiting}, nil
			}
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to create the sandbox namespace %s: %w", name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Created the sandbox namespace", "namespace", name, "source", source)
	}
	return ctrl.Result{}, nil
}

// isolate bounds each sandbox namespace before anything runs there: the isolation
// NetworkPolicy, the ResourceQuota and the LimitRange. It waits until each quota is in force
// (the API server admits everything in a namespace whose quota the controller has not counted
// yet).
func (r *Reconciler) isolate(ctx context.Context, sc *scope) (ctrl.Result, error) {
	var waits []string
	for _, name := range slices.Sorted(maps.Values(sc.namespaces)) {
		id := sc.sandbox.Spec.DrillID
		for _, obj := range []client.Object{IsolationPolicyOf(name, id, r.dns()), QuotaOf(name, id, r.quota()), LimitsOf(name, id)} {
			if err := r.Client.Create(ctx, obj, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, fmt.Errorf("failed to create %T %s/%s: %w", obj, name, obj.GetName(), err)
			}
		}
		quota := &corev1.ResourceQuota{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: name, Name: SandboxQuota}, quota); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to get ResourceQuota %s/%s: %w", name, SandboxQuota, err)
		}
		if len(quota.Status.Hard) == 0 {
			waits = append(waits, fmt.Sprintf("the ResourceQuota of %s to be counted", name))
		}
	}
	if len(waits) > 0 {
		sc.waiting(StepCopyingVolumes, "waiting for "+strings.Join(waits, ", "))
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil
	}
	return ctrl.Result{}, nil
}

// DNSPeer names the cluster's DNS pods, the one thing outside the drill a sandbox pod may reach.
type DNSPeer struct {
	// Namespace holds them; PodLabels select them there.
	Namespace string
	PodLabels map[string]string
}

// DefaultDNS is CoreDNS (or kube-dns) as Kubernetes' installers deploy it: the pods labelled
// k8s-app=kube-dns in kube-system.
var DefaultDNS = DNSPeer{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}}

func (r *Reconciler) dns() DNSPeer {
	if r.DNS.Namespace == "" {
		return DefaultDNS
	}
	return r.DNS
}

// IsolationPolicyOf is the policy of a sandbox namespace: every pod (the empty selector) denied
// all traffic, in and out, except to and from the pods of the drill's own sandboxes, and DNS
// (port 53, UDP and TCP) out to the cluster's DNS pods alone. A sandbox starts the application's
// copy next to its secondary: nothing outside may reach it, and it may reach nothing of the
// primary's, nor carry its data out to a name server of its choosing.
func IsolationPolicyOf(namespace, id string, dns DNSPeer) *networkingv1.NetworkPolicy {
	sandboxes := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelDrill: id}}}}
	servers := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: dns.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: dns.PodLabels},
	}}
	ports := []networkingv1.NetworkPolicyPort{
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
		{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: IsolationPolicy, Labels: map[string]string{LabelDrill: id}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: sandboxes}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: sandboxes}, {To: servers, Ports: ports}},
		},
	}
}

// DefaultQuota bounds a sandbox namespace: a copy of an application and its check, not a
// tenant's share of the target cluster. Its pods request what their containers say, or what
// LimitsOf gives those that say nothing.
var DefaultQuota = corev1.ResourceList{
	corev1.ResourcePods:                  resource.MustParse("64"),
	"count/jobs.batch":                   resource.MustParse("8"),
	corev1.ResourceRequestsCPU:           resource.MustParse("8"),
	corev1.ResourceRequestsMemory:        resource.MustParse("32Gi"),
	corev1.ResourceServicesNodePorts:     resource.MustParse("0"),
	corev1.ResourceServicesLoadBalancers: resource.MustParse("0"),
}

func (r *Reconciler) quota() corev1.ResourceList {
	if r.Quota == nil {
		return DefaultQuota
	}
	return r.Quota
}

// QuotaOf is the ResourceQuota of a sandbox namespace.
func QuotaOf(namespace, id string, hard corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SandboxQuota, Labels: map[string]string{LabelDrill: id}},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard.DeepCopy()},
	}
}

// LimitsOf is the LimitRange of a sandbox namespace: a container that requests no CPU or memory
// requests a little (so the quota admits it), and none is given a limit it did not ask for.
func LimitsOf(namespace, id string) *corev1.LimitRange {
	return &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SandboxLimits, Labels: map[string]string{LabelDrill: id}},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
			},
		}}},
	}
}
