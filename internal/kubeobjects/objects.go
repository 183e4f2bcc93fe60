package kubeobjects

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Names that every namespace holds, created by Kubernetes (or OpenShift) on each cluster.
const (
	defaultServiceAccount = "default"
	rootCAConfigMap       = "kube-root-ca.crt"
	openShiftCAConfigMap  = "openshift-service-ca.crt"
	serviceAccountToken   = "kubernetes.io/service-account-token" //nolint:gosec // a Secret type, not a credential
	// serviceNone is the clusterIP of a headless Service, kept: it is what the user asked.
	serviceNone = "None"
)

// labelsNotStored are labels of this cluster that a restored object must not carry: the fence
// of a demoting group, and the namespace name label that the API server sets by itself.
var labelsNotStored = []string{"drover.io/fenced", "kubernetes.io/metadata.name"}

// jobLabelsNotStored are the labels a Job's controller puts on its pod template, which name the
// Job's uid on this cluster; the API server refuses a Job that carries another Job's.
var jobLabelsNotStored = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// Skip reports whether an object of the selected kinds is left out of a capture, and why:
// objects a controller owns (its controller recreates them from its own spec), objects being
// deleted, what Kubernetes creates in every namespace by itself, and the Jobs of drover's hooks
// (LabelHook): each is the run of one hook on this cluster, which a restore elsewhere would run
// again.
func Skip(obj *unstructured.Unstructured) (string, bool) {
	gk := obj.GroupVersionKind().GroupKind()
	if controlled(obj) {
		return "a controller owns it", true
	}
	if obj.GetDeletionTimestamp() != nil {
		return "being deleted", true
	}
	switch {
	case HookJob(obj):
		return "a drover hook's Job, the run of a hook on this cluster", true
	case gk == KindSA && obj.GetName() == defaultServiceAccount:
		return "every namespace has it", true
	case gk == KindConfigMap && (obj.GetName() == rootCAConfigMap || obj.GetName() == openShiftCAConfigMap):
		return "every namespace has it", true
	case gk == KindSecret && secretType(obj) == serviceAccountToken:
		return "a service account token of this cluster", true
	}
	return "", false
}

// controlled reports whether an object has a controller owner.
func controlled(obj *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func secretType(obj *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(obj.Object, "type")
	return t
}

// Clean returns a copy of an object without what only means something on the cluster it came
// from: uid, resourceVersion, generation, creation and deletion times, managedFields, owners,
// finalizers (of this cluster's controllers), status, the fence label; a Service's allocated
// cluster IPs and node ports (the peer allocates its own; a headless Service stays headless); a
// Job's generated selector and the pod template labels that name its uid; a drover scale hook's
// record on a Deployment or StatefulSet, whose replicas go back to what they were before the
// hook (unscale). Other annotations stay, kubectl's last-applied-configuration included.
func Clean(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "finalizers", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(out.Object, "status")
	if l := out.GetLabels(); l != nil {
		for _, k := range labelsNotStored {
			delete(l, k)
		}
		out.SetLabels(l)
	}
	switch out.GroupVersionKind().GroupKind() {
	case KindService:
		cleanService(out)
	case KindJob:
		cleanJob(out)
	case KindDeployment, KindSTS:
		unscale(out)
	case KindNamespace:
		// The namespace's finalizers are the API server's.
		unstructured.RemoveNestedField(out.Object, "spec")
	}
	return out
}

func cleanService(svc *unstructured.Unstructured) {
	if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); ip != serviceNone {
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies"} {
			unstructured.RemoveNestedField(svc.Object, "spec", f)
		}
	}
	unstructured.RemoveNestedField(svc.Object, "spec", "healthCheckNodePort")
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

func cleanJob(job *unstructured.Unstructured) {
	if manual, _, _ := unstructured.NestedBool(job.Object, "spec", "manualSelector"); manual {
		return // the user's own selector
	}
	unstructured.RemoveNestedField(job.Object, "spec", "selector")
	l, found, _ := unstructured.NestedStringMap(job.Object, "spec", "template", "metadata", "labels")
	if !found {
		return
	}
	for _, k := range jobLabelsNotStored {
		delete(l, k)
	}
	if len(l) == 0 {
		unstructured.RemoveNestedField(job.Object, "spec", "template", "metadata", "labels")
		return
	}
	_ = unstructured.SetNestedStringMap(job.Object, l, "spec", "template", "metadata", "labels")
}

// Order sorts objects in restore order: by tier (namespaces first, workloads last), then group,
// kind, namespace and name, so a capture's bytes are stable.
func Order(objects []*unstructured.Unstructured) {
	slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int {
		ga, gb := a.GroupVersionKind().GroupKind(), b.GroupVersionKind().GroupKind()
		return cmp.Or(compareKinds(ga, gb),
			strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
}

// Key names an object in messages: Kind[.group] namespace/name.
func Key(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return KindString(obj.GroupVersionKind().GroupKind()) + " " + name
}
