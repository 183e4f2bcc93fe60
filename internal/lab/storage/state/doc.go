// Package state is the on-disk state of the lab's storage, under a managed cluster's storage
// data directory, as csi-driver-host-path keeps its volumes' and snapshots' state in its leaf
// package pkg/state (kubernetes-csi/csi-driver-host-path pkg/state/state.go):
//
//   - paths.go: where a volume's data (volumes/<handle>), a snapshot's data
//     (snapshots/<handle>), an image's replication state (images/<handle>.json) and a
//     consistency group's (groups/<handle>.json, with the intent record of a group mirror being
//     applied, groups/<handle>.intent.json, and its staged copies beside the volumes) live.
//   - image.go: the image state (role, epoch, resync, last mirror), read, written and changed
//     atomically.
//
// It imports nothing of the lab, so the storage controller, the lab root (which resolves a PVC
// to its volume's directory) and whatever else reads a volume share one layout.
package state
