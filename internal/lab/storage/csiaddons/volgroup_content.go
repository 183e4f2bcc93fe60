package csiaddons

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// The VolumeGroupReplicationContent controller, as csi-addons' (d4d7fea4,
// internal/controller/replication.storage/volumegroupreplicationcontent_controller.go) drives
// ceph-csi's volume groups (ceph/ceph-csi internal/csi-addons/rbd/volumegroup.go):
//
//   - it waits until the content names its VolumeGroupReplication (volumeGroupReplicationRef),
//     then annotates that VolumeGroupReplication with the content's name and adds the finalizer
//     vgr-protection to the content;
//   - a content without a handle gets one: the storage creates the group of its volumes
//     (CreateVolumeGroup) and the handle is written to spec.volumeGroupReplicationHandle; a
//     content with a handle (one restored on the peer) only has its membership set
//     (ModifyVolumeGroupMembership), which for the lab's storage is the content's list itself;
//   - its status lists the PVs of its volume handles (persistentVolumeRefList and
//     persistentVolumeMappingList);
//   - a content being deleted waits until its VolumeGroupReplication is being deleted too, and
//     then, 15 s apart, until the VolumeReplication's finalizer has left it; it then deletes the
//     storage's group, removes its name from the VolumeGroupReplication and its finalizer.

func setupVolGroupContent(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-vgrcontent").
		For(&replicationv1alpha1.VolumeGroupReplicationContent{}).
		Complete(reconcileFunc(s.reconcileContent))
}

func (s *store) reconcileContent(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	if err := s.Client.Get(ctx, req.NamespacedName, content); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ref := content.Spec.VolumeGroupReplicationRef
	if ref == nil || !s.Ours(content.Spec.Provisioner) {
		return ctrl.Result{}, nil
	}
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vgr); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get VolumeGroupReplication %s/%s of content %s: %w", ref.Namespace, ref.Name, content.Name, err)
	}
	if !content.DeletionTimestamp.IsZero() {
		return s.deleteContent(ctx, content, vgr)
	}
	if err := patchMeta(ctx, s.Client, vgr, func() {
		if vgr.Annotations[VolumeGroupReplicationContentNameAnnotation] == "" {
			metav1.SetMetaDataAnnotation(&vgr.ObjectMeta, VolumeGroupReplicationContentNameAnnotation, content.Name)
		}
	}); err != nil {
		return ctrl.Result{}, err
	}
	if err := patchMeta(ctx, s.Client, content, func() {
		controllerutil.AddFinalizer(content, VGRProtectionFinalizer)
		if content.Spec.VolumeGroupReplicationHandle == "" {
			// CreateVolumeGroup: the lab's storage names the group after the content's UID.
			content.Spec.VolumeGroupReplicationHandle = "group-" + string(content.UID)
		}
	}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, s.patchContentStatus(ctx, content)
}

// patchContentStatus lists the PVs of the content's volume handles.
func (s *store) patchContentStatus(ctx context.Context, content *replicationv1alpha1.VolumeGroupReplicationContent) error {
	var pvs corev1.PersistentVolumeList
	if err := s.Client.List(ctx, &pvs); err != nil {
		return fmt.Errorf("failed to list PVs for content %s: %w", content.Name, err)
	}
	byHandle := map[string]string{}
	for _, pv := range pvs.Items {
		if pv.Spec.CSI != nil {
			byHandle[pv.Spec.CSI.VolumeHandle] = pv.Name
		}
	}
	before := content.DeepCopy()
	content.Status = replicationv1alpha1.VolumeGroupReplicationContentStatus{}
	for _, h := range content.Spec.Source.VolumeHandles {
		if pv, ok := byHandle[h]; ok {
			content.Status.PersistentVolumeRefList = append(content.Status.PersistentVolumeRefList, corev1.LocalObjectReference{Name: pv})
			content.Status.PersistentVolumeMappingList = append(content.Status.PersistentVolumeMappingList,
				replicationv1alpha1.PersistentVolumeMapping{Name: pv, VolumeHandle: h})
		}
	}
	return patchStatusIfChanged(ctx, s.Client, content, before)
}

// deleteContent deletes the storage's group once the content may go.
func (s *store) deleteContent(ctx context.Context, content *replicationv1alpha1.VolumeGroupReplicationContent, vgr *replicationv1alpha1.VolumeGroupReplication) (ctrl.Result, error) {
	if vgr.DeletionTimestamp.IsZero() {
		// Upstream: "cannot delete VolumeGroupReplicationContent resource, until owner
		// VolumeGroupReplication instance is deleted".
		return ctrl.Result{}, nil
	}
	if controllerutil.ContainsFinalizer(content, VolumeReplicationFinalizer) {
		return ctrl.Result{RequeueAfter: vgrRequeue}, nil
	}
	if h := content.Spec.VolumeGroupReplicationHandle; h != "" {
		// DeleteVolumeGroup: the group goes; its images stay, ordinary volumes.
		for _, p := range []string{state.GroupPath(s.Opts.DataDir, h), state.GroupIntentPath(s.Opts.DataDir, h)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return ctrl.Result{}, fmt.Errorf("failed to delete volume group %s: %w", h, err)
			}
		}
	}
	if err := patchMeta(ctx, s.Client, vgr, func() {
		delete(vgr.Annotations, VolumeGroupReplicationContentNameAnnotation)
	}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, client.IgnoreNotFound(patchMeta(ctx, s.Client, content, func() {
		controllerutil.RemoveFinalizer(content, VGRProtectionFinalizer)
	}))
}
