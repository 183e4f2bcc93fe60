// Package storage is the lab's storage: CSI-like drivers whose volumes are directories on this
// machine. It provisions a PV for each PVC of its storage classes, deletes released volumes,
// and marks VolumeAttachments of its drivers attached, so workloads on the lab's fake nodes get
// Bound PVCs and real attachments as they would with a CSI driver and external-attacher.
//
// It runs as `drover lab storage-controller`, one process per managed cluster, started and
// stopped with that cluster. It is lab code: production packages never import it.
package storage
