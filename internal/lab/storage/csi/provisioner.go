package csi

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// provisionedByAnnotation is the annotation external-provisioner sets on the PVs it creates.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// store is the shared driver context (internal/lab/storage/driver) that the CSI side's
// controllers are methods on.
type store struct{ *driver.Store }

// SetupVolumes registers the provisioner, the deleter and the attacher with the manager.
func SetupVolumes(mgr ctrl.Manager, d *driver.Store) error {
	s := &store{Store: d}
	if err := ctrl.NewControllerManagedBy(mgr).Named("lab-provisioner").
		For(&corev1.PersistentVolumeClaim{}).Complete(driver.ReconcilerFunc(s.provision)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("lab-deleter").
		For(&corev1.PersistentVolume{}).Complete(driver.ReconcilerFunc(s.deleteReleased)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("lab-attacher").
		For(&storagev1.VolumeAttachment{}).Complete(driver.ReconcilerFunc(s.attach))
}

// provision creates a volume and a PV pre-bound to a pending PVC of one of the storage's classes.
func (s *store) provision(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A PVC naming a volume is bound or pre-bound (a restore does that): nothing to provision.
	if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || pvc.Spec.StorageClassName == nil {
		return ctrl.Result{}, nil
	}
	sc := &storagev1.StorageClass{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, sc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.Ours(sc.Provisioner) {
		return ctrl.Result{}, nil
	}
	if waitsForConsumer(sc, pvc) {
		// The PVC's next change (the scheduler's annotation) brings it back.
		log.V(1).Info("Waiting for the first consumer", "pvc", klog.KObj(pvc))
		return ctrl.Result{}, nil
	}
	name := "pvc-" + string(pvc.UID)
	if res, err := s.populate(ctx, pvc, sc, name); err != nil || !res.IsZero() {
		return res, err
	}
	if err := os.MkdirAll(state.VolumePath(s.Opts.DataDir, name), 0o750); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create volume %s: %w", name, err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{provisionedByAnnotation: sc.Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       sc.Provisioner,
				VolumeHandle: name,
			}},
		},
	}
	if err := s.Client.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("failed to create PV %s for PVC %s: %w", name, req.NamespacedName, err)
	}
	log.Info("Provisioned volume", "pvc", klog.KObj(pvc), "pv", name)
	return ctrl.Result{}, nil
}
