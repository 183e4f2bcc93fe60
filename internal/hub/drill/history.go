package drill

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
)

func containsFinalizer(d *v1alpha1.DRDrill) bool {
	return controllerutil.ContainsFinalizer(d, Finalizer)
}

// historyLimit is the DRPlacementControl's drillHistoryLimit, or the default.
func historyLimit(d *v1alpha1.DRPlacementControl) int {
	if d != nil && d.Spec.DrillHistoryLimit != nil && *d.Spec.DrillHistoryLimit > 0 {
		return int(*d.Spec.DrillHistoryLimit)
	}
	return defaultHistoryLimit
}

// pruneHistory deletes the finished drills of an application beyond the newest
// drillHistoryLimit (by creation, then name). Drills that have not finished are never deleted.
func (r *Reconciler) pruneHistory(ctx context.Context, namespace, drpcName string) error {
	drpc := &v1alpha1.DRPlacementControl{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: drpcName}, drpc); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to get DRPlacementControl %s/%s: %w", namespace, drpcName, err)
		}
		drpc = nil
	}
	done, err := r.finishedDrills(ctx, namespace, drpcName)
	if err != nil {
		return err
	}
	limit := historyLimit(drpc)
	if len(done) <= limit {
		return nil
	}
	slices.SortFunc(done, func(a, b entry) int {
		switch {
		case a.before(b):
			return 1
		case b.before(a):
			return -1
		}
		return 0
	})
	for _, e := range done[limit:] {
		d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: e.key.Namespace, Name: e.key.Name, UID: e.uid}}
		if err := r.Client.Delete(ctx, d, client.Preconditions{UID: &e.uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete DRDrill %s beyond the history limit: %w", klog.KObj(d), err)
		}
		if r.drills != nil {
			r.drills.deleting(namespace, drpcName, e.key)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted a drill beyond the history limit", "drill", klog.KObj(d), "limit", limit)
	}
	return nil
}

// finishedDrills are an application's final drills that are not being deleted: from the index
// (turns.go), or listed without one.
func (r *Reconciler) finishedDrills(ctx context.Context, namespace, drpcName string) ([]entry, error) {
	if r.drills != nil {
		return r.drills.finished(namespace, drpcName), nil
	}
	list := &v1alpha1.DRDrillList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("failed to list the DRDrills of namespace %s: %w", namespace, err)
	}
	var done []entry
	for i := range list.Items {
		d := &list.Items[i]
		if d.Spec.DRPCName == drpcName && final(d.Status.Phase) && d.DeletionTimestamp.IsZero() {
			done = append(done, entryOf(d))
		}
	}
	return done, nil
}
