package storage

import (
	"context"
	"errors"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/csi"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/volsync"
)

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
		setupVolumes, setupVolRep, setupWriters, setupSnapshots, setupVolSync,
	} {
		if err := setup(mgr, s); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// setupVolumes registers the CSI side's provisioner, deleter and attacher
// (internal/lab/storage/csi).
func setupVolumes(mgr ctrl.Manager, s *store) error { return csi.SetupVolumes(mgr, s.Store) }

// setupSnapshots registers the CSI side's snapshotter (internal/lab/storage/csi).
func setupSnapshots(mgr ctrl.Manager, s *store) error { return csi.SetupSnapshots(mgr, s.Store) }

// setupVolSync registers VolSync's controllers and the ServiceExport controller
// (internal/lab/storage/volsync).
func setupVolSync(mgr ctrl.Manager, s *store) error { return volsync.Setup(mgr, s.Store) }

// setupVolRep registers csi-addons' VolumeReplication controller (internal/lab/storage/csiaddons).
func setupVolRep(mgr ctrl.Manager, s *store) error { return csiaddons.Setup(mgr, s.Store) }

// store is the shared driver context (internal/lab/storage/driver) that the workload writers
// (writer.go) are methods on.
type store struct{ *driver.Store }
