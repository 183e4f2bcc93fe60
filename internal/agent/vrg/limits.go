package vrg

import (
	"strings"

	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
)

// Default bounds of what the agent reads from a store (`drover agent --s3-max-*`). A capture
// holds every captured object of a group, Secrets and ConfigMaps included; the other objects
// are one PV's or PVC's metadata or a primary marker, a few kilobytes. The agent's memory
// limit (512 Mi in the release manifests) must hold a few captures at once, one per worker.
const (
	DefaultMaxCaptureBytes  int64 = 64 << 20
	DefaultMaxMetadataBytes int64 = 1 << 20
	// DefaultMaxKeys bounds a listing of one group's pvs/ or pvcs/: one key per PVC.
	DefaultMaxKeys = 10000
)

// StoreLimits bound what the agent reads from a store: an object larger than its limit, or a
// listing of more keys, is refused (objectstore.KindRefused) before it is read whole. Zero
// fields are the defaults.
type StoreLimits struct {
	// CaptureBytes bounds a group's capture (kubeobjects.StoreKey).
	CaptureBytes int64
	// MetadataBytes bounds every other object.
	MetadataBytes int64
	// Keys bounds one listing.
	Keys int
}

// objectstoreLimits is l for a store, the defaults filled in.
func (l StoreLimits) objectstoreLimits() objectstore.Limits {
	capture, metadata, keys := l.CaptureBytes, l.MetadataBytes, l.Keys
	if capture <= 0 {
		capture = DefaultMaxCaptureBytes
	}
	if metadata <= 0 {
		metadata = DefaultMaxMetadataBytes
	}
	if keys <= 0 {
		keys = DefaultMaxKeys
	}
	return objectstore.Limits{
		MaxObjectBytes: func(key string) int64 {
			if strings.HasSuffix(key, "/"+kubeobjects.StoreKey) {
				return capture
			}
			return metadata
		},
		MaxKeys: keys,
	}
}
