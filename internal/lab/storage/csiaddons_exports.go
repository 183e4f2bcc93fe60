package storage

import "github.com/drover-io/drover/internal/lab/storage/csiaddons"

// PVCProtectionFinalizer is the finalizer csi-addons keeps on a PVC while its VolumeReplication
// exists (csiaddons.PVCProtectionFinalizer).
const PVCProtectionFinalizer = csiaddons.PVCProtectionFinalizer
