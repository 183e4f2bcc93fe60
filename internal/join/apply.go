package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// undoTimeout bounds deleting what a failed run created.
const undoTimeout = 30 * time.Second

// written is an object a run applied, and whether the run created it.
type written struct {
	t       *target
	obj     *unstructured.Unstructured
	created bool
}

// run applies objects and remembers what it created, so a failure can undo exactly that.
type run struct {
	out     io.Writer
	written []written
}

// apply creates or updates obj on t by server-side apply and prints created, configured or
// unchanged, as kubectl does.
func (r *run) apply(ctx context.Context, t *target, obj *unstructured.Unstructured) error {
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(obj.GroupVersionKind())
	err := t.cl.Get(ctx, client.ObjectKeyFromObject(obj), before)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to get %s on %s: %w", describe(obj), t.role, t.explain(err))
	}
	created := apierrors.IsNotFound(err)
	applied := obj.DeepCopy()
	if err := t.cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply %s on %s: %w", describe(obj), t.role, t.explain(err))
	}
	r.written = append(r.written, written{t: t, obj: obj, created: created})
	verb := "unchanged"
	switch {
	case created:
		verb = "created"
	case changed(before, applied):
		verb = "configured"
	}
	fmt.Fprintf(r.out, "%s: %s %s\n", t.role, describe(obj), verb)
	return nil
}

// changed tells whether applying wrote obj's spec or metadata. An object with a generation (a
// ValidatingAdmissionPolicy) has a status its controller writes at any time, which changes the
// resourceVersion without the apply changing anything: its generation and labels say more.
func changed(before, after *unstructured.Unstructured) bool {
	if before.GetGeneration() == 0 {
		return after.GetResourceVersion() != before.GetResourceVersion()
	}
	return after.GetGeneration() != before.GetGeneration() ||
		!maps.Equal(after.GetLabels(), before.GetLabels()) ||
		!maps.Equal(after.GetAnnotations(), before.GetAnnotations())
}

// undo deletes, newest first, what the run created, and returns cause with what it did.
func (r *run) undo(ctx context.Context, cause error) error {
	// Undo even when the failure was the caller's cancellation (an interrupted join).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	var undone []string
	var errs []error
	for _, w := range slices.Backward(r.written) {
		if !w.created {
			continue
		}
		err := w.t.cl.Delete(ctx, w.obj, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s on %s: %w", describe(w.obj), w.t.role, err))
			continue
		}
		undone = append(undone, describe(w.obj)+" on "+w.t.role)
	}
	msg := "nothing had been created"
	if len(undone) > 0 {
		msg = "deleted what this run created: " + strings.Join(undone, ", ")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w\njoin did not complete; %s; it could not undo: %w", cause, msg, errors.Join(errs...))
	}
	return fmt.Errorf("%w\njoin did not complete and %s", cause, msg)
}

// describe names an object as kubectl does: kind/name, or kind namespace/name.
func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// printYAML writes objs as one YAML stream, each document headed by a comment naming the
// cluster it is for.
func printYAML(out io.Writer, where string, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		raw, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("failed to print %s: %w", describe(obj), err)
		}
		fmt.Fprintf(out, "---\n# %s\n%s", where, raw)
	}
	return nil
}
