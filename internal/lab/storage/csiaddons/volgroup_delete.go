package csiaddons

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

// The group's VolumeReplication and the deletion of a group, as csi-addons does them
// (d4d7fea4, internal/controller/replication.storage/volumereplication_controller.go for a
// dataSource of kind VolumeGroupReplication: getVolumeGroupReplicationDataSource,
// annotateVolumeGroupReplicationWithOwner, addFinalizerToVGRContent; and
// volumegroupreplication_controller.go's deletion branch, isSafeToDeleteVGR in finalizers.go).

// resolveGroup finds the group a VolumeReplication of kind VolumeGroupReplication drives: its
// VolumeGroupReplication, that one's content, and the content's group handle and volumes. A
// mirror to this storage left half applied is completed first (settleGroup), so nothing acts on
// half a group.
func (s *store) resolveGroup(ctx context.Context, vr *replicationv1alpha1.VolumeReplication, class *replicationv1alpha1.VolumeReplicationClass) (image, string, error) {
	vgr, content, problem, err := s.groupOf(ctx, vr)
	if problem != "" || err != nil {
		return nil, problem, err
	}
	h := content.Spec.VolumeGroupReplicationHandle
	if h == "" {
		return nil, fmt.Sprintf("VolumeGroupReplicationContent %s of VolumeGroupReplication %s has no group handle yet", content.Name, vgr.Name), nil
	}
	if content.Spec.Provisioner != class.Spec.Provisioner || !s.Ours(content.Spec.Provisioner) {
		return nil, fmt.Sprintf("VolumeGroupReplicationContent %s is not a group of VolumeReplicationClass %s's provisioner %s", content.Name, class.Name, class.Spec.Provisioner), nil
	}
	g := groupImage{s: s, handle: h, members: slices.Sorted(slices.Values(content.Spec.Source.VolumeHandles))}
	unlock, err := groupLock(s.Opts.DataDir, h)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	if err := settleGroup(s.Opts.DataDir, h); err != nil {
		return nil, "", err
	}
	return g, "", nil
}

// groupOf returns the VolumeGroupReplication of a group's VolumeReplication and its content, or
// why they cannot be had (upstream's getVolumeGroupReplicationDataSource errors).
func (s *store) groupOf(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (*replicationv1alpha1.VolumeGroupReplication, *replicationv1alpha1.VolumeGroupReplicationContent, string, error) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: vr.Namespace, Name: vr.Spec.DataSource.Name}, vgr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Sprintf("VolumeGroupReplication %s/%s not found", vr.Namespace, vr.Spec.DataSource.Name), nil
		}
		return nil, nil, "", err
	}
	name := vgr.Spec.VolumeGroupReplicationContentName
	if name == "" {
		return vgr, nil, "VolumeGroupReplicationContentName is empty", nil
	}
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, content); err != nil {
		if apierrors.IsNotFound(err) {
			return vgr, nil, fmt.Sprintf("VolumeGroupReplicationContent %s not found", name), nil
		}
		return vgr, nil, "", err
	}
	return vgr, content, "", nil
}

// protectGroup is the group's VolumeReplication claiming its group: the VolumeGroupReplication
// annotated with its name (a group has one VolumeReplication), and its finalizer on the content,
// so the content outlives it.
func (s *store) protectGroup(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) (string, error) {
	vgr, content, problem, err := s.groupOf(ctx, vr)
	if problem != "" || err != nil {
		return "", err // resolveImage reports the problem
	}
	if owner := vgr.Annotations[VolumeReplicationNameAnnotation]; owner != "" && owner != vr.Name {
		return fmt.Sprintf("VGR %q not owned by VolumeReplication %q: %s owns it", vgr.Name, vr.Name, owner), nil
	}
	if err := patchMeta(ctx, s.Client, vgr, func() {
		metav1.SetMetaDataAnnotation(&vgr.ObjectMeta, VolumeReplicationNameAnnotation, vr.Name)
	}); err != nil {
		return "", err
	}
	if !content.DeletionTimestamp.IsZero() {
		return "", nil
	}
	return "", patchMeta(ctx, s.Client, content, func() { controllerutil.AddFinalizer(content, VolumeReplicationFinalizer) })
}

// releaseGroup undoes protectGroup when the group's VolumeReplication is deleted.
func (s *store) releaseGroup(ctx context.Context, vr *replicationv1alpha1.VolumeReplication) error {
	vgr, content, _, err := s.groupOf(ctx, vr)
	if err != nil {
		return err
	}
	if content != nil {
		if err := patchMeta(ctx, s.Client, content, func() { controllerutil.RemoveFinalizer(content, VolumeReplicationFinalizer) }); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if vgr == nil || vgr.Annotations[VolumeReplicationNameAnnotation] != vr.Name {
		return nil
	}
	return client.IgnoreNotFound(patchMeta(ctx, s.Client, vgr, func() { delete(vgr.Annotations, VolumeReplicationNameAnnotation) }))
}

// deleteVGR is upstream's deletion branch: the VolumeReplication deleted, then the content; once
// neither names itself on the VolumeGroupReplication any more (isSafeToDeleteVGR), the member
// PVCs released and the finalizer removed; until then it is retried every 15 s.
func (s *store) deleteVGR(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(vgr, VGRProtectionFinalizer) {
		return ctrl.Result{}, nil
	}
	if name := vgr.Spec.VolumeReplicationName; name != "" {
		vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: vgr.Namespace, Name: name}}
		if err := s.Client.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("failed to delete VolumeReplication %s/%s of VolumeGroupReplication %s: %w", vgr.Namespace, name, vgr.Name, err)
		}
	}
	if name := vgr.Spec.VolumeGroupReplicationContentName; name != "" {
		content := &replicationv1alpha1.VolumeGroupReplicationContent{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.Client.Delete(ctx, content); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("failed to delete VolumeGroupReplicationContent %s of VolumeGroupReplication %s: %w", name, vgr.Name, err)
		}
	}
	if vgr.Annotations[VolumeGroupReplicationContentNameAnnotation] != "" || vgr.Annotations[VolumeReplicationNameAnnotation] != "" {
		return ctrl.Result{RequeueAfter: vgrRequeue}, nil
	}
	for _, ref := range vgr.Status.PersistentVolumeClaimsRefList {
		if err := s.releaseMember(ctx, vgr, ref.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, client.IgnoreNotFound(patchMeta(ctx, s.Client, vgr, func() {
		controllerutil.RemoveFinalizer(vgr, VGRProtectionFinalizer)
	}))
}
