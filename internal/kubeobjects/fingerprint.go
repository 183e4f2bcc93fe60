package kubeobjects

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Fingerprint is a digest of the objects a capture would read, as a watch-backed cache of their
// metadata shows them: the kind, namespace, name, UID and resourceVersion of each Namespace and
// of each selected object. The API server gives an object a new resourceVersion at every change,
// so while the fingerprint stays the same, so does what a capture reads (as far as the cache has
// seen: a change it has not seen yet changes a later fingerprint). The zero Fingerprint is none.
type Fingerprint [sha256.Size]byte

// FingerprintOf computes the fingerprint of a capture of resources in namespaces from c, which
// holds (or starts) one metadata-only informer per kind, cluster-wide. ok is false while one of
// them has not synced yet: the caller then captures as usual. It never waits for an informer,
// so a watch the caller may not make (RBAC) costs a capture, not a stuck pass.
func FingerprintOf(ctx context.Context, c cache.Cache, resources []Resource, namespaces []string, sel Selection) (fp Fingerprint, ok bool, err error) {
	gvks := []schema.GroupVersionKind{KindNamespace.WithVersion("v1")}
	for _, r := range resources {
		gvks = append(gvks, r.GVK)
	}
	for _, gvk := range gvks {
		synced, err := informerSynced(ctx, c, gvk)
		if err != nil || !synced {
			return Fingerprint{}, false, err
		}
	}
	var lines []string
	for _, ns := range namespaces {
		line, err := namespaceLine(ctx, c, ns)
		if err != nil {
			return Fingerprint{}, false, err
		}
		lines = append(lines, line)
		for _, r := range resources {
			items, err := listCached(ctx, c, r, ns, sel)
			if err != nil {
				return Fingerprint{}, false, err
			}
			for i := range items {
				lines = append(lines, metadataLine(r.GVK.GroupKind(), &items[i]))
			}
		}
	}
	slices.Sort(lines)
	return sha256.Sum256([]byte(strings.Join(lines, "\n"))), true, nil
}

// informerSynced reports whether the cache's metadata informer of gvk has synced, starting it
// (without waiting) when there is none.
func informerSynced(ctx context.Context, c cache.Cache, gvk schema.GroupVersionKind) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false, fmt.Errorf("failed to watch %s: %w", KindString(gvk.GroupKind()), err)
	}
	return inf.HasSynced(), nil
}

// listCached lists the metadata of the objects of r that sel selects in namespace ns from c.
func listCached(ctx context.Context, c cache.Cache, r Resource, ns string, sel Selection) ([]metav1.PartialObjectMetadata, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List"))
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel.Selector}); err != nil {
		return nil, fmt.Errorf("failed to list %s in namespace %s from the cache: %w", KindString(r.GVK.GroupKind()), ns, err)
	}
	return l.Items, nil
}

// namespaceLine is a namespace's line of a fingerprint; a namespace that does not exist has
// one too, so its creation changes the fingerprint.
func namespaceLine(ctx context.Context, c cache.Cache, name string) (string, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(KindNamespace.WithVersion("v1"))
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return "Namespace " + name + " absent", nil
		}
		return "", fmt.Errorf("failed to get namespace %s from the cache: %w", name, err)
	}
	return metadataLine(KindNamespace, obj), nil
}

// metadataLine is one object's line of a fingerprint.
func metadataLine(gk schema.GroupKind, obj *metav1.PartialObjectMetadata) string {
	return strings.Join([]string{KindString(gk), obj.Namespace, obj.Name, string(obj.UID), obj.ResourceVersion}, " ")
}

// NoWorkloadsCached reports whether the watch-backed metadata cache c shows no workload of
// resources (those IsWorkload, not controlled by another object) selected in namespaces. False
// when it cannot say: a kind outside DefaultKinds (the agent may watch only those), an informer
// not synced yet (started now, never waited for), no cache (c nil). A caller that deletes
// workloads reads them from the API server when this is false; when it is true, a workload
// created since the cache last heard of it is found by a later pass, once the cache shows it.
func NoWorkloadsCached(ctx context.Context, c cache.Cache, resources []Resource, namespaces []string, sel Selection) bool {
	if c == nil {
		return false
	}
	for _, r := range resources {
		if !IsWorkload(r.GVK.GroupKind()) {
			continue
		}
		if !slices.Contains(DefaultKinds, r.GVK.GroupKind()) {
			return false
		}
		if synced, err := informerSynced(ctx, c, r.GVK); err != nil || !synced {
			return false
		}
		for _, ns := range namespaces {
			items, err := listCached(ctx, c, r, ns, sel)
			if err != nil {
				return false
			}
			for i := range items {
				if metav1.GetControllerOf(&items[i]) == nil {
					return false
				}
			}
		}
	}
	return true
}
