package csi

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// attach marks a VolumeAttachment of one of the storage's drivers attached, as
// external-attacher does once the driver's ControllerPublishVolume succeeded.
func (s *store) attach(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	va := &storagev1.VolumeAttachment{}
	if err := s.Client.Get(ctx, req.NamespacedName, va); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.Ours(va.Spec.Attacher) || va.DeletionTimestamp != nil || va.Status.Attached {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(va.DeepCopy())
	va.Status.Attached = true
	if err := s.Client.Status().Patch(ctx, va, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to mark VolumeAttachment %s attached: %w", va.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Attached volume", "volumeAttachment", va.Name, "node", va.Spec.NodeName)
	return ctrl.Result{}, nil
}
