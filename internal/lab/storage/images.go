package storage

import (
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// ImageRole is a volume image's replication role (state.ImageRole).
type ImageRole = state.ImageRole

// ImageState is what the lab storage records about one image (state.ImageState), kept on disk
// in images/<handle>.json.
type ImageState = state.ImageState

// The roles of an image (state.RoleNone, state.RolePrimary, state.RoleSecondary).
const (
	RoleNone      = state.RoleNone
	RolePrimary   = state.RolePrimary
	RoleSecondary = state.RoleSecondary
)

// ErrReadOnly is returned by writes to a secondary image.
var ErrReadOnly = state.ErrReadOnly

// Images is one cluster's lab storage on disk, with its peer's (driver.Images).
type Images = driver.Images

// NewImages opens the storage in dir with its peer in peerDir (empty: no peer).
func NewImages(dir, peerDir string) (*Images, error) { return driver.NewImages(dir, peerDir) }

// VolumePath is where the data of the volume with handle lives under a cluster's data dir
// (state.VolumePath).
func VolumePath(dataDir, handle string) string { return state.VolumePath(dataDir, handle) }

// SnapshotPath is where the data of the snapshot with handle lives under a cluster's data dir
// (state.SnapshotPath).
func SnapshotPath(dataDir, handle string) string { return state.SnapshotPath(dataDir, handle) }
