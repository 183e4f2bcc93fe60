package kubeobjects

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"

	"github.com/drover-io/drover/internal/podsecurity"
)

// A checked restore (docs/security.md, "The S3 stores"): whoever can write to a store writes
// the capture a promotion restores, and the agent may create Roles and RoleBindings (it holds
// escalate and bind). So a restore never takes the document's word for where an object goes or
// what it is: every object must lie in the group's protected namespaces (the group's spec, not
// the capture's namespaces list), be of a namespaced kind as this cluster's API server serves it
// (RESTMapper), and not be a kind drover never captures. RoleBindings granting every
// authenticated or anonymous user are refused. Service-account token Secrets, which a capture
// never holds, are dropped, and a Namespace keeps only the labels and annotations of
// NamespaceKeyRestored: the other controllers' keys are the target cluster's. Its Pod Security
// level is the one exception: the restored namespace enforces the captured level, never less
// than podsecurity.Floor (a forged capture saying privileged gets baseline), and the restore
// creates no workload whose pods that level refuses (Restore).

// Refusal is why a restore refuses a capture: the first object it cannot create safely.
type Refusal struct {
	// Object is the object's key (Key), Index its place in the capture.
	Object string
	Index  int
	// Why says what is wrong with it.
	Why string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("the capture's object %d (%s) %s: refusing to restore any of the capture", r.Index, r.Object, r.Why)
}

// Checked is what a restore may create from a capture.
type Checked struct {
	// Objects are the capture's objects to restore, namespaces cleaned, in restore order.
	Objects []*unstructured.Unstructured
	// Dropped names the objects left out without refusing the capture.
	Dropped []string
}

// Check returns the objects of c that a restore into the protected namespaces may create, or a
// *Refusal for the first one that it must not: a refusal refuses the whole capture, which a
// drover agent could not have written.
func Check(c *Capture, namespaces []string, mapper meta.RESTMapper) (Checked, error) {
	var out Checked
	seen := map[string]bool{}
	for i, o := range c.Objects {
		refuse := func(format string, args ...any) (Checked, error) {
			return Checked{}, &Refusal{Object: Key(o), Index: i, Why: fmt.Sprintf(format, args...)}
		}
		gk := o.GroupVersionKind().GroupKind()
		if gk == KindNamespace {
			if o.GetNamespace() != "" || !slices.Contains(namespaces, o.GetName()) {
				return refuse("is not one of the group's protected namespaces [%s]", strings.Join(namespaces, ", "))
			}
			if seen[o.GetName()] {
				return refuse("is the second Namespace %s of the capture", o.GetName())
			}
			seen[o.GetName()] = true
			out.Objects = append(out.Objects, restorableNamespace(o))
			continue
		}
		if Never(gk) {
			return refuse("is of kind %s, which drover never captures", KindString(gk))
		}
		if ns := o.GetNamespace(); !slices.Contains(namespaces, ns) {
			return refuse("is outside the group's protected namespaces [%s]", strings.Join(namespaces, ", "))
		}
		if why := scopeProblem(o, mapper); why != "" {
			return refuse("%s", why)
		}
		if gk == KindSecret && secretType(o) == serviceAccountToken {
			out.Dropped = append(out.Dropped, Key(o)+" (a service account token: each cluster issues its own)")
			continue
		}
		if gk == KindRoleBind {
			if subject := publicSubject(o); subject != "" {
				return refuse("binds %s, which is every user of the cluster", subject)
			}
		}
		out.Objects = append(out.Objects, o)
	}
	// A protected namespace the capture does not hold is still restored at the floor.
	for _, ns := range namespaces {
		if !seen[ns] {
			out.Objects = append(out.Objects, restorableNamespace(&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}))
		}
	}
	Order(out.Objects)
	return out, nil
}

// scopeProblem says why an object's kind cannot be restored into a namespace: cluster-scoped as
// this cluster serves it. A kind the cluster does not serve passes (its create fails and is
// reported), as does a mapper that cannot tell for another reason (its create says why).
func scopeProblem(o *unstructured.Unstructured, mapper meta.RESTMapper) string {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return ""
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return fmt.Sprintf("is of kind %s, which is cluster-scoped: drover restores only namespaced objects", KindString(gvk.GroupKind()))
	}
	return ""
}

// publicGroups and publicUsers are subjects that mean every user, authenticated or not.
var (
	publicGroups = []string{"system:authenticated", "system:unauthenticated"}
	publicUsers  = []string{"system:anonymous"}
)

// publicSubject is the first subject of a RoleBinding that names every user, or "".
func publicSubject(o *unstructured.Unstructured) string {
	rb := &rbacv1.RoleBinding{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, rb); err != nil {
		return "subjects that cannot be read (" + err.Error() + ")"
	}
	for _, s := range rb.Subjects {
		switch {
		case s.Kind == rbacv1.GroupKind && slices.Contains(publicGroups, s.Name):
			return "group " + s.Name
		case s.Kind == rbacv1.UserKind && slices.Contains(publicUsers, s.Name):
			return "user " + s.Name
		}
	}
	return ""
}

// NamespaceKeyRestored reports whether a namespace's label or annotation of this key is
// restored from a capture as it is: keys without a prefix (team=db) and the app.kubernetes.io/
// ones. Every other prefixed key belongs to the target cluster: other controllers (OpenShift's
// SCC ranges, node selectors, drover's own fence label) keep theirs there, and
// pod-security.kubernetes.io/, which decides what the namespace's pods may do, is restored only
// as a floor (restorableNamespace).
func NamespaceKeyRestored(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	return !found || prefix == "app.kubernetes.io"
}

// restorableNamespace is a copy of a captured Namespace with only the restored labels and
// annotations, and the Pod Security level to enforce (LevelOf) at the latest version.
func restorableNamespace(o *unstructured.Unstructured) *unstructured.Unstructured {
	ns := o.DeepCopy()
	keep := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		maps.DeleteFunc(out, func(k, _ string) bool { return !NamespaceKeyRestored(k) })
		return out
	}
	labels := keep(o.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[podsecurity.LabelEnforce] = string(LevelOf(o))
	labels[podsecurity.LabelEnforceVersion] = api.VersionLatest
	ns.SetLabels(labels)
	ns.SetAnnotations(keep(o.GetAnnotations()))
	return ns
}

// LevelOf is the Pod Security level a captured Namespace is restored with: the level it
// enforced, never below podsecurity.Floor.
func LevelOf(ns *unstructured.Unstructured) api.Level {
	return podsecurity.Stricter(podsecurity.Enforced(ns.GetLabels()).Level, podsecurity.Floor)
}
