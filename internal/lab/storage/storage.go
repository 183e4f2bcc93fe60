package storage

import (
	"context"
	"errors"
	"fmt"
	"os"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
	"github.com/drover-io/drover/internal/lab/storage/volsync"
)

// provisionedByAnnotation is the annotation external-provisioner sets on the PVs it creates.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// Options configure the lab storage of one cluster (driver.Options).
type Options = driver.Options

// setupFunc registers one lab storage controller with the manager.
type setupFunc func(ctrl.Manager, *store) error

// Run runs the lab storage controllers against cfg until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.DataDir == "" || len(opts.Drivers) == 0 {
		return errors.New("lab storage needs a data directory and at least one driver")
	}
	images, err := driver.NewImages(opts.DataDir, opts.PeerDataDir)
	if err != nil {
		return err
	}
	images.SetPartitionFlags(opts.PartitionFlags...)
	if err := images.MarkAlive(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		// VolumeSnapshots back the VolSync copy method the lab storage honours.
		snapshotv1.AddToScheme,
		replicationv1alpha1.AddToScheme,
		volsyncv1alpha1.AddToScheme,
		mcsv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("failed to create lab storage manager: %w", err)
	}
	s := &store{Store: &driver.Store{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Opts: opts, Images: images}}
	for _, setup := range []setupFunc{
		setupProvisioner, setupDeleter, setupAttacher, setupVolRep, setupWriters, setupSnapshots, setupVolSync,
	} {
		if err := setup(mgr, s); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// setupVolSync registers VolSync's controllers and the ServiceExport controller
// (internal/lab/storage/volsync).
func setupVolSync(mgr ctrl.Manager, s *store) error { return volsync.Setup(mgr, s.Store) }

// setupVolRep registers csi-addons' VolumeReplication controller (internal/lab/storage/csiaddons).
func setupVolRep(mgr ctrl.Manager, s *store) error { return csiaddons.Setup(mgr, s.Store) }

func setupProvisioner(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-provisioner").
		For(&corev1.PersistentVolumeClaim{}).Complete(driver.ReconcilerFunc(s.provision))
}

func setupDeleter(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-deleter").
		For(&corev1.PersistentVolume{}).Complete(driver.ReconcilerFunc(s.deleteReleased))
}

func setupAttacher(mgr ctrl.Manager, s *store) error {
	return ctrl.NewControllerManagedBy(mgr).Named("lab-attacher").
		For(&storagev1.VolumeAttachment{}).Complete(driver.ReconcilerFunc(s.attach))
}

// store is the shared driver context (internal/lab/storage/driver) that the CSI side's
// controllers are methods on.
type store struct{ *driver.Store }

// VolumePath is where the data of the volume with handle lives under a cluster's data dir
// (state.VolumePath).
func VolumePath(dataDir, handle string) string { return state.VolumePath(dataDir, handle) }

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
