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
// per-volume mirroring and snapshots are; CopyVolumes copies several at one. The pacing
// (Options.CopyPacing, CopySettings) makes the copy, and so the freeze, take as long as a real
// volume's copy.
func (s *Store) CopyVolume(handle, dst string) (int64, error) {
	return s.CopyVolumes([]string{handle}, []string{dst})
}

// CopyVolumes copies the volumes handles[i] into dsts[i] (created) at one instant, as a
// consistency group's snapshot takes them (an RBD group mirror snapshot, a VolumeGroupSnapshot):
// every volume's image lock taken (in handle order, so two group copies never deadlock), then
// every process that uses any of them stopped, and only then the first file copied; nothing
// resumes before the last volume is copied. The copies are one crash-consistent point of all the
// volumes: a writer that commits to one volume and then to the next is seen between two commits,
// never after the first and before the second.
func (s *Store) CopyVolumes(handles, dsts []string) (int64, error) {
	if len(handles) != len(dsts) {
		return 0, fmt.Errorf("failed to copy volumes %v: %d destinations for %d volumes", handles, len(dsts), len(handles))
	}
	cs, err := s.copySettings()
	if err != nil {
		return 0, err
	}
	sorted := slices.Sorted(slices.Values(handles))
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return 0, fmt.Errorf("failed to copy volumes %v: a volume is named twice", handles)
	}
	for _, h := range sorted {
		unlock := s.Images.Lock(h)
		defer unlock()
	}
	if cs.Freeze != CopyFreezeNone {
		for _, h := range handles {
			thaw, err := freeze.Freeze(s.Images.VolumeDir(h))
			if err != nil {
				return 0, fmt.Errorf("failed to freeze the users of volume %s: %w", h, err)
			}
			defer thaw()
		}
	}
	var total int64
	for i, h := range handles {
		n, err := copyTree(s.Images.VolumeDir(h), dsts[i], cs.Pacing)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
