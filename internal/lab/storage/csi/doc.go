// Package csi is the CSI side of the lab's storage: what a CSI driver and its sidecars do for
// the lab's drivers (block.lab.drover.io, file.lab.drover.io), one file per service, as
// csi-driver-host-path keeps one file per CSI service.
//
//   - provisioner.go: a PV for each PVC of its storage classes, from a VolumeSnapshot data source
//     when one is named.
//   - deleter.go: a released volume whose policy is Delete loses its data and its PV.
//   - attacher.go: VolumeAttachments marked attached, as external-attacher does.
//   - binding.go: a PVC of a WaitForFirstConsumer class only once a pod using it is scheduled.
//   - snapshot.go: VolumeSnapshots, their contents and data, and PVCs restored from them.
//   - snapshot_static.go: pre-provisioned snapshot contents; a secondary image refused.
//
// It models these upstream files: kubernetes-csi/external-provisioner with
// sig-storage-lib-external-provisioner controller.go (shouldProvision); kubernetes-csi/
// external-attacher; kubernetes-csi/external-snapshotter pkg/common-controller/
// snapshot_controller.go and pkg/sidecar-controller/snapshot_controller.go; k8s.io/kubernetes
// pkg/controller/volume/persistentvolume/pv_controller.go and
// pkg/scheduler/framework/plugins/volumebinding/binder.go; k8s.io/component-helpers
// storage/volume/pv_helpers.go; ceph/ceph-csi internal/rbd/controllerserver.go and
// internal/rbd/rbd_util.go.
//
// The storage controller (internal/lab/storage) registers it with SetupVolumes and
// SetupSnapshots; it works on the shared driver context (internal/lab/storage/driver) and the
// on-disk state (internal/lab/storage/state).
package csi
