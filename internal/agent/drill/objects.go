package drill

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/podsecurity"
	"github.com/drover-io/drover/internal/tenancy"
)

// droppedGroups are the API groups whose kinds never enter a sandbox: what routes traffic from
// outside the cluster (Ingresses, OpenShift Routes, Gateway API routes). NetworkPolicies of the
// application are dropped too (droppedKinds): they only allow, and would widen the isolation.
var droppedGroups = []string{"route.openshift.io", "gateway.networking.k8s.io"}

var droppedKinds = []schema.GroupKind{
	{Group: "networking.k8s.io", Kind: "Ingress"},
	{Group: "extensions", Kind: "Ingress"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
}

// restoreObjects restores the group's captured objects into the sandboxes, mapped (MapObject),
// tier by tier as a promotion does (kubeobjects.Restore: existing objects are adopted, so a pass
// after a crash goes on where the last stopped).
func (r *Reconciler) restoreObjects(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.step(StepRestoringObjects).Finished != nil {
		return ctrl.Result{}, nil
	}
	if sc.group.Spec.KubeObjectProtection == nil {
		sc.fail(StepRestoringObjects, "a drill starts the application from drover's capture of its objects, and there is none: "+noCaptureMessage)
		return ctrl.Result{}, nil
	}
	capture, from, unavailable, refused := vrg.ReadCapture(ctx, sc.group, r.Client.RESTMapper(), func(p v1alpha1.S3Profile) (objectstore.Store, error) {
		return vrg.OpenStore(ctx, r.APIReader, p, r.NewStore, r.StoreLimits)
	})
	if capture == nil {
		if from == "" {
			sc.waiting(StepRestoringObjects, "no S3 profile could be read: "+strings.Join(unavailable, "; "))
			return ctrl.Result{RequeueAfter: requeueWaiting}, nil
		}
		sc.fail(StepRestoringObjects, fmt.Sprintf("no S3 profile holds a capture of the application's objects that drover can restore (read %s; refused: %s): protect its namespaces (protectedNamespaces) for a drill to start it",
			from, strings.Join(refused, "; ")))
		return ctrl.Result{}, nil
	}
	if err := r.raiseLevels(ctx, sc, capture); err != nil {
		return ctrl.Result{}, err
	}
	var objects []*unstructured.Unstructured
	dropped := 0
	for _, o := range capture.Objects {
		m, ok := MapObject(o, sc.namespaces)
		if !ok {
			dropped++
			continue
		}
		objects = append(objects, m)
	}
	res, err := kubeobjects.Restore(ctx, r.Client, objects, fieldOwner)
	if err != nil {
		sc.waiting(StepRestoringObjects, fmt.Sprintf("restoring the capture of %s: %v", capture.CapturedAt.UTC().Format("2006-01-02T15:04:05Z"), err))
		return ctrl.Result{}, err
	}
	if len(res.Refused) > 0 {
		sc.fail(StepRestoringObjects, fmt.Sprintf("the sandbox's Pod Security level refuses the pods of %s: the application would not start there. "+
			"Meet the level in its workloads, or ask an administrator to label the drill's namespace on the hub %s=baseline "+
			"(a protected namespace's own stricter level still applies)", strings.Join(res.Refused, "; "), tenancy.LabelDrillPodSecurity))
		return ctrl.Result{}, nil
	}
	sc.finish(StepRestoringObjects, v1alpha1.DrillResultPassed, fmt.Sprintf(
		"the capture of %s from S3 profile %s restored into the sandbox (%s: %d created, %d there already; %d left out)",
		capture.CapturedAt.UTC().Format("2006-01-02T15:04:05Z"), from, kubeobjects.Summary(objects), res.Created, res.Adopted, dropped))
	return ctrl.Result{}, nil
}

// raiseLevels raises the sandbox of each protected namespace to the level that namespace
// enforced, as the capture says (never below baseline), when it is stricter than the sandbox's
// own: a drill runs nothing the application's own namespace would refuse.
func (r *Reconciler) raiseLevels(ctx context.Context, sc *scope, capture *kubeobjects.Capture) error {
	for _, o := range capture.Objects {
		sandbox, ok := sc.namespaces[o.GetName()]
		if o.GroupVersionKind().GroupKind() != kubeobjects.KindNamespace || !ok {
			continue
		}
		ns := &corev1.Namespace{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: sandbox}, ns); err != nil {
			return fmt.Errorf("failed to get the sandbox namespace %s: %w", sandbox, err)
		}
		labels, raised := podsecurity.Raise(ns.Labels, kubeobjects.LevelOf(o))
		if !raised {
			continue
		}
		before := ns.DeepCopy()
		ns.Labels = labels
		if err := r.Client.Patch(ctx, ns, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to raise the Pod Security level of the sandbox namespace %s: %w", sandbox, err)
		}
		ctrl.LoggerFrom(ctx).Info("Raised the sandbox's Pod Security level to its application's", "namespace", sandbox, "level", labels[podsecurity.LabelEnforce])
	}
	return nil
}

// MapObject is a captured object as the sandbox gets it, or false when it stays out: the
// namespace mapped; Namespaces (the drill makes its own), routes from outside, NetworkPolicies
// and service-account tokens left out; Services reduced to ClusterIP, ExternalName ones left
// out; CronJobs suspended; RoleBinding subjects of a protected namespace mapped.
func MapObject(obj *unstructured.Unstructured, namespaces map[string]string) (*unstructured.Unstructured, bool) {
	gk := obj.GroupVersionKind().GroupKind()
	sandbox, ok := namespaces[obj.GetNamespace()]
	if !ok || gk == kubeobjects.KindNamespace || slices.Contains(droppedGroups, gk.Group) || slices.Contains(droppedKinds, gk) {
		return nil, false
	}
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); gk == kubeobjects.KindSecret && t == "kubernetes.io/service-account-token" {
		return nil, false
	}
	out := obj.DeepCopy()
	out.SetNamespace(sandbox)
	switch gk {
	case kubeobjects.KindService:
		if t, _, _ := unstructured.NestedString(out.Object, "spec", "type"); t == "ExternalName" {
			return nil, false
		}
		clusterIPOnly(out)
	case kubeobjects.KindCronJob:
		_ = unstructured.SetNestedField(out.Object, true, "spec", "suspend")
	case kubeobjects.KindRoleBind:
		mapSubjects(out, namespaces)
	}
	return out, true
}

// clusterIPOnly makes a Service reachable only inside the cluster: type ClusterIP, no node
// ports, load balancer or external addresses.
func clusterIPOnly(svc *unstructured.Unstructured) {
	_ = unstructured.SetNestedField(svc.Object, "ClusterIP", "spec", "type")
	for _, f := range []string{"externalIPs", "loadBalancerIP", "loadBalancerSourceRanges", "loadBalancerClass",
		"externalTrafficPolicy", "healthCheckNodePort", "allocateLoadBalancerNodePorts", "externalName"} {
		unstructured.RemoveNestedField(svc.Object, "spec", f)
	}
	ports, found, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if !found {
		return
	}
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			delete(m, "nodePort")
		}
	}
	_ = unstructured.SetNestedSlice(svc.Object, ports, "spec", "ports")
}

// mapSubjects maps the namespaces of a RoleBinding's subjects that are protected ones.
func mapSubjects(rb *unstructured.Unstructured, namespaces map[string]string) {
	subjects, found, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if !found {
		return
	}
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok {
			if ns, _ := m["namespace"].(string); namespaces[ns] != "" {
				m["namespace"] = namespaces[ns]
			}
		}
	}
	_ = unstructured.SetNestedSlice(rb.Object, subjects, "subjects")
}
