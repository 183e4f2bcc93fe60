package kubeobjects

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StoreKey is the key of a group's capture under the group's prefix in every store. The capture
// is one object, written with one PUT: S3 replaces an object atomically, so a reader gets the
// previous capture or the new one, never a mix.
const StoreKey = "kubeobjects/capture.json"

// FormatVersion is the version of the capture document this package writes and reads.
const FormatVersion = 1

// Capture is the document stored for a group: every captured object, cleaned, in restore order.
type Capture struct {
	// Version is FormatVersion.
	Version int `json:"version"`
	// CapturedAt is when the objects were read.
	CapturedAt metav1.Time `json:"capturedAt"`
	// Namespaces are the protected namespaces the objects were read from.
	Namespaces []string `json:"namespaces"`
	// Objects are the objects, Namespaces included, in restore order.
	Objects []*unstructured.Unstructured `json:"objects"`
}

// listConcurrency bounds the lists of one namespace a capture sends at once. They are
// independent reads; sent one after another, a capture of the 16 default kinds kept an agent's
// worker about 0.8 s waiting on its API server (make bench, N = 100, docs/benchmarks.md).
const listConcurrency = 4

// Collect reads, uncached, the protected namespaces and the objects of the resources in them
// that the selector selects, leaves out what Skip names and cleans the rest (Clean), in restore
// order. A namespace that does not exist is no error: it has nothing to capture. Any other
// failure fails the whole capture, so a partial capture is never stored.
func Collect(ctx context.Context, c client.Reader, resources []Resource, namespaces []string, sel Selection) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, ns := range namespaces {
		nsObj := &unstructured.Unstructured{}
		nsObj.SetGroupVersionKind(KindNamespace.WithVersion("v1"))
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed to get namespace %s: %w", ns, err)
		}
		out = append(out, Clean(nsObj))
		lists, err := listAll(ctx, c, resources, ns, sel)
		if err != nil {
			return nil, err
		}
		for _, items := range lists {
			for _, item := range items {
				if _, skip := Skip(item); !skip {
					out = append(out, Clean(item))
				}
			}
		}
	}
	Order(out)
	return out, nil
}

// listAll lists every resource in namespace ns, listConcurrency at a time, each resource's items
// at its index; the first error fails them all.
func listAll(ctx context.Context, c client.Reader, resources []Resource, ns string, sel Selection) ([][]*unstructured.Unstructured, error) {
	lists := make([][]*unstructured.Unstructured, len(resources))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, r := range resources {
		g.Go(func() error {
			items, err := list(gctx, c, r, ns, sel)
			lists[i] = items
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return lists, nil
}

// list lists the objects of one resource in one namespace that the selector selects.
func list(ctx context.Context, c client.Reader, r Resource, ns string, sel Selection) ([]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List"))
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel.Selector}); err != nil {
		return nil, fmt.Errorf("failed to list %s in namespace %s: %w", KindString(r.GVK.GroupKind()), ns, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		item := &l.Items[i]
		// A list's items may lack their kind; the list's says it.
		item.SetGroupVersionKind(r.GVK)
		out = append(out, item)
	}
	return out, nil
}

// Encode writes a capture as JSON.
func Encode(c *Capture) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the capture: %w", err)
	}
	return body, nil
}

// Decode reads a capture written by Encode. A document of another version is an error (a newer
// agent wrote it), so a restore never acts on what it does not understand; so is an object
// outside the capture's namespaces, which a restore must never create.
func Decode(body []byte) (*Capture, error) {
	c := &Capture{}
	if err := json.Unmarshal(body, c); err != nil {
		return nil, fmt.Errorf("failed to decode the capture: %w", err)
	}
	if c.Version != FormatVersion {
		return nil, fmt.Errorf("the capture has format version %d and this agent reads version %d: upgrade the agent", c.Version, FormatVersion)
	}
	for i, o := range c.Objects {
		if o == nil || o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("failed to decode the capture: object %d has no kind or name", i)
		}
		if ns := namespaceOf(o); !slices.Contains(c.Namespaces, ns) {
			return nil, fmt.Errorf("the capture's object %d (%s) is outside its namespaces [%s]: the capture was not written by a drover agent, refusing to restore any of it",
				i, Key(o), strings.Join(c.Namespaces, ", "))
		}
	}
	Order(c.Objects)
	return c, nil
}

// namespaceOf is the namespace an object belongs to: a Namespace's own name, else its
// metadata.namespace ("" for any other cluster-scoped object, which a capture never holds).
func namespaceOf(o *unstructured.Unstructured) string {
	if o.GroupVersionKind().GroupKind() == KindNamespace {
		if o.GetNamespace() != "" {
			return ""
		}
		return o.GetName()
	}
	return o.GetNamespace()
}

// Summary counts a capture's objects by kind, for messages: "2 ConfigMap, 1 StatefulSet.apps".
func Summary(objects []*unstructured.Unstructured) string {
	counts := map[string]int{}
	var kinds []string
	for _, o := range objects {
		k := KindString(o.GroupVersionKind().GroupKind())
		if counts[k] == 0 {
			kinds = append(kinds, k)
		}
		counts[k]++
	}
	slices.Sort(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}
