package csi

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// deleteReleased removes the data and the PV of a released volume whose policy is Delete.
func (s *store) deleteReleased(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pv := &corev1.PersistentVolume{}
	if err := s.Client.Get(ctx, req.NamespacedName, pv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pv.Spec.CSI == nil || !s.Ours(pv.Spec.CSI.Driver) || pv.DeletionTimestamp != nil ||
		pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return ctrl.Result{}, nil
	}
	if err := os.RemoveAll(state.VolumePath(s.Opts.DataDir, pv.Spec.CSI.VolumeHandle)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to remove volume %s: %w", pv.Spec.CSI.VolumeHandle, err)
	}
	// Preconditions make sure a PV that was re-used in the meantime is not deleted.
	if err := s.Client.Delete(ctx, pv, client.Preconditions{UID: &pv.UID, ResourceVersion: &pv.ResourceVersion}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted released volume", "pv", pv.Name)
	return ctrl.Result{}, nil
}
