package vrg

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// VolSync's movers run unprivileged unless their namespace is annotated
// volsync.backube/privileged-movers: "true" (backube/volsync docs/usage/permissionmodel.rst,
// internal/controller/utils/namespace.go). A group whose DRPolicy asks for privileged movers
// (spec.volSync.movers Privileged) sets the annotation on its protected namespaces, marked as
// its own, and removes what it set when the policy no longer asks or the group is deleted. An
// annotation someone else set is left alone.

const (
	// privilegedMoversAnnotation is VolSync's namespace annotation.
	privilegedMoversAnnotation = "volsync.backube/privileged-movers"
	// AnnotationPrivilegedMoversBy names the group (<namespace>/<name>) that set
	// privilegedMoversAnnotation on a namespace.
	AnnotationPrivilegedMoversBy = "drover.io/privileged-movers-by"
)

// privilegedMovers reports whether the group asks for privileged movers.
func privilegedMovers(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.VolSync != nil && vrg.Spec.VolSync.Movers == v1alpha1.VolSyncMoversPrivileged
}

// moverAnnotations changes a namespace's annotations so that its movers are privileged when
// want is true, touching only what group set; it reports whether anything changed.
func moverAnnotations(annotations map[string]string, group string, want bool) (map[string]string, bool) {
	set, ours := annotations[privilegedMoversAnnotation] == "true", annotations[AnnotationPrivilegedMoversBy] == group
	switch {
	case want && !set:
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[privilegedMoversAnnotation] = "true"
		annotations[AnnotationPrivilegedMoversBy] = group
		return annotations, true
	case !want && ours:
		delete(annotations, privilegedMoversAnnotation)
		delete(annotations, AnnotationPrivilegedMoversBy)
		return annotations, true
	}
	return annotations, false
}

// AnnotationPrivilegedMovers on a group records that it annotated its protected namespaces for
// privileged movers. The agent reads namespaces uncached, so a settled pass reads none: only a
// change of the policy's wish (or the group's deletion) reads and patches them.
const AnnotationPrivilegedMovers = "drover.io/privileged-movers"

// volSyncMovers sets or removes the privileged-movers annotation of the protected namespaces when
// the group's wish differs from what it recorded.
func (r *Reconciler) volSyncMovers(ctx context.Context, sc *scope) (ctrl.Result, error) {
	want := privilegedMovers(sc.vrg)
	if _, recorded := sc.vrg.Annotations[AnnotationPrivilegedMovers]; r.volSync() == nil || want == recorded {
		return ctrl.Result{}, nil
	}
	if err := r.setMoverPrivileges(ctx, sc.vrg, want); err != nil {
		return ctrl.Result{}, err
	}
	value := ""
	if want {
		value = "true"
	}
	return ctrl.Result{}, r.annotate(ctx, sc, AnnotationPrivilegedMovers, value)
}

// setMoverPrivileges annotates (want) or un-annotates the group's protected namespaces.
func (r *Reconciler) setMoverPrivileges(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, want bool) error {
	if r.volSync() == nil {
		return nil
	}
	var errs []error
	for _, name := range protectedNamespaces(vrg) {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		before := ns.DeepCopy()
		annotations, changed := moverAnnotations(ns.Annotations, volsync.GroupKey(vrg), want)
		if !changed {
			continue
		}
		ns.Annotations = annotations
		if err := r.Client.Patch(ctx, ns, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to set the VolSync mover privileges of namespace %s: %w", name, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Set the VolSync mover privileges of a namespace", "namespace", name, "privileged", want)
	}
	return errors.Join(errs...)
}
