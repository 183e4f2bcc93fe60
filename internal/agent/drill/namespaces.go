package drill

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsolationPolicy names the NetworkPolicy that isolates each sandbox namespace.
const IsolationPolicy = "drover-drill-isolation"

// ensureNamespaces creates the sandbox namespaces, labelled with the drill's ID. A namespace of
// that name that the drill did not make fails the drill: it is never taken over.
func (r *Reconciler) ensureNamespaces(ctx context.Context, sc *scope) (ctrl.Result, error) {
	sc.step(StepCopyingVolumes)
	for _, source := range slices.Sorted(maps.Keys(sc.namespaces)) {
		name := sc.namespaces[source]
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			sc.fail(StepCopyingVolumes, fmt.Sprintf("the sandbox of namespace %s would be %s, not a valid namespace name (%s): drill an application whose namespaces are shorter", source, name, errs[0]))
			return ctrl.Result{}, nil
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{LabelDrill: sc.sandbox.Spec.DrillID},
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

// isolate puts the isolation NetworkPolicy in each sandbox namespace before anything runs there.
func (r *Reconciler) isolate(ctx context.Context, sc *scope) (ctrl.Result, error) {
	for _, name := range sc.namespaces {
		np := IsolationPolicyOf(name, sc.sandbox.Spec.DrillID)
		if err := r.Client.Create(ctx, np, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("failed to create NetworkPolicy %s/%s: %w", name, IsolationPolicy, err)
		}
	}
	return ctrl.Result{}, nil
}

// IsolationPolicyOf is the policy of a sandbox namespace: every pod (the empty selector) denied
// all traffic, in and out, except to and from the pods of the drill's own sandboxes and DNS
// (port 53, UDP and TCP) out. A sandbox starts the application's copy next to its secondary:
// nothing outside may reach it, and it may reach nothing of the primary's.
func IsolationPolicyOf(namespace, id string) *networkingv1.NetworkPolicy {
	sandboxes := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelDrill: id}}}}
	dns := []networkingv1.NetworkPolicyPort{
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
		{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: IsolationPolicy, Labels: map[string]string{LabelDrill: id}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: sandboxes}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: sandboxes}, {Ports: dns}},
		},
	}
}
