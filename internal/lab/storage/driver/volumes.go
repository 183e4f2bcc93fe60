package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/freeze"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// BoundVolume returns the lab PV bound to a PVC, or a wait while there is none.
func (s *Store) BoundVolume(ctx context.Context, namespace, name string) (*corev1.PersistentVolume, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, WaitFor(Retry, "PVC %s does not exist", name)
		}
		return nil, err
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, WaitFor(Poll, "PVC %s is not bound yet", name)
	}
	pv := &corev1.PersistentVolume{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, fmt.Errorf("failed to get PV %s of PVC %s: %w", pvc.Spec.VolumeName, name, err)
	}
	if pv.Spec.CSI == nil || !s.Ours(pv.Spec.CSI.Driver) {
		return nil, &WaitError{
			Msg:   fmt.Sprintf("PVC %s is not a lab volume: the lab storage moves only volumes of its storage classes", name),
			After: Idle, Cause: ErrNotLabVolume,
		}
	}
	return pv, nil
}

// PVVolume is, for a consumer outside the storage controller (the lab kubelet mounting a PVC),
// the directory that holds the data of the lab volume behind pv in the storage data directory
// dataDir, and the state of its image: the consumer may write it only while st.Writable(). A PV
// of a CSI driver not in drivers is not a lab volume (ErrNotLabVolume).
func PVVolume(dataDir string, pv *corev1.PersistentVolume, drivers []string) (dir string, st state.ImageState, err error) {
	if pv.Spec.CSI == nil || !slices.Contains(drivers, pv.Spec.CSI.Driver) {
		return "", st, fmt.Errorf("PV %s is not a volume of the lab storage's drivers %s: %w", pv.Name, strings.Join(drivers, ", "), ErrNotLabVolume)
	}
	handle := pv.Spec.CSI.VolumeHandle
	if st, err = state.Read(state.ImagePath(dataDir, handle)); err != nil {
		return "", st, err
	}
	return state.VolumePath(dataDir, handle), st, nil
}

// ErrNotLabVolume is the cause of a wait for a PVC bound to a volume of another storage, which
// the lab cannot copy.
var ErrNotLabVolume = errors.New("not a lab volume")

// CopyVolume copies a volume into dst (created) at one instant, returning the bytes copied: under
// its image lock (no writer of this process writes) and, unless Options.CopyFreeze (or the
// running storage's CopySettings) says none, with every process that uses the volume stopped
// (internal/lab/freeze: the pods that mount it), so the copy is the state a power loss at that
// instant would leave, save the page cache. Each volume is copied at its own instant, as
// per-volume mirroring and snapshots are. The pacing (Options.CopyPacing, CopySettings) makes
// the copy, and so the freeze, take as long as a real volume's copy.
func (s *Store) CopyVolume(handle, dst string) (int64, error) {
	cs, err := s.copySettings()
	if err != nil {
		return 0, err
	}
	unlock := s.Images.Lock(handle)
	defer unlock()
	src := s.Images.VolumeDir(handle)
	if cs.Freeze != CopyFreezeNone {
		thaw, err := freeze.Freeze(src)
		if err != nil {
			return 0, fmt.Errorf("failed to freeze the users of volume %s: %w", handle, err)
		}
		defer thaw()
	}
	return copyTree(src, dst, cs.Pacing)
}
