package storage

import "github.com/drover-io/drover/internal/lab/storage/volsync"

// The annotations with which tests steer the lab's VolSync (internal/lab/storage/volsync).
const (
	AnnotationFailMover    = volsync.AnnotationFailMover
	AnnotationHoldSync     = volsync.AnnotationHoldSync
	CleanupDelayAnnotation = volsync.CleanupDelayAnnotation
	HoldImageAnnotation    = volsync.HoldImageAnnotation
	ImageDelayAnnotation   = volsync.ImageDelayAnnotation
	RsyncPaceAnnotation    = volsync.RsyncPaceAnnotation
)
