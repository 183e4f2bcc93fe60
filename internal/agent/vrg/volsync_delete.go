package vrg

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/replication/volsync"
)

// unprotectVolSync removes what VolSync left of a deleted group besides what unprotectPVC
// removes per protected PVC (DESIGN.md, PVC rule 6): the PVs of unfinished final syncs are
// given back (their DR-owned PVCs deleted, claimRef and reclaim policy restored), then every
// ReplicationSource and ReplicationDestination of the group, listed from the API server (the
// snapshots and volumes VolSync made for a destination are owned by it and go with it), and the
// group's key Secrets.
// It reports whether nothing is left.
func (r *Reconciler) unprotectVolSync(ctx context.Context, sc *scope) (bool, error) {
	vs := r.volSync()
	if vs == nil {
		return true, nil
	}
	pvs := &corev1.PersistentVolumeList{}
	// From the API server, as reconcileDelete's PVCs are.
	if err := r.APIReader.List(ctx, pvs, client.MatchingLabels{LabelFinalSyncGroup: sc.vrg.Name, LabelFinalSyncGroupNamespace: sc.vrg.Namespace}); err != nil {
		return false, fmt.Errorf("failed to list the PVs of final syncs: %w", err)
	}
	var errs []error
	for i := range pvs.Items {
		// finalSyncOpen is false for a group being deleted only if no request is open; either way
		// continueFinalSync gives the PV back once its DR-owned PVC is gone.
		if err := r.continueFinalSync(ctx, sc, vs, &pvs.Items[i]); err != nil {
			errs = append(errs, err)
		}
	}
	done := len(pvs.Items) == 0
	for _, ns := range volSyncNamespaces(sc.vrg) {
		gone, err := vs.DeleteGroupObjects(ctx, sc.vrg, ns, volsync.GroupDeletion{Keys: true, Fresh: true})
		if err != nil {
			errs = append(errs, err)
		}
		done = done && gone
	}
	for _, key := range keySecrets(sc) {
		secret := &corev1.Secret{}
		secret.Namespace, secret.Name = key.Namespace, key.Name
		if err := r.Client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete Secret %s: %w", key, err))
		}
	}
	return done, errors.Join(errs...)
}

// keySecrets are the key Secrets the group may have made or received: one per PVC it receives
// or sends to a destination.
func keySecrets(sc *scope) []client.ObjectKey {
	var keys []client.ObjectKey
	for _, rp := range receivePVCs(sc.vrg) {
		keys = append(keys, client.ObjectKey{Namespace: rp.PVCNamespace, Name: volsync.KeySecretName(sc.vrg.Name, rp.PVCName)})
	}
	if sc.vrg.Spec.VolSync != nil {
		for _, d := range sc.vrg.Spec.VolSync.Destinations {
			keys = append(keys, client.ObjectKey{Namespace: d.PVCNamespace, Name: d.KeySecretName})
		}
	}
	return keys
}
