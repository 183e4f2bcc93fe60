package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// A pod's persistentVolumeClaim volumes, as a kubelet's volume manager mounts them
// (kubernetes/kubernetes pkg/kubelet/volumemanager: the desired-state populator resolves a claim
// to its PV in populator/desired_state_of_world_populator.go, the reconciler mounts it through
// volume/util/operationexecutor/operation_generator.go, and kubelet.go's syncPod waits for every
// volume before it creates a container). Here the volume is the directory of the lab volume
// behind the PV, bound into the container's mount namespace; its image must be writable (not a
// secondary), as a Ceph RBD image must be primary for a node to map it read-write.
const (
	// mountBackOffInitial and mountBackOffMax bound the delay between two attempts to mount a
	// pod's claims, as a kubelet's volume operations back off
	// (pkg/util/goroutinemap/exponentialbackoff/exponential_backoff.go: 500 ms doubling to 2m2s).
	mountBackOffInitial = 500 * time.Millisecond
	mountBackOffMax     = 2*time.Minute + 2*time.Second
	// reasonFailedMount is the reason of the Warning event of a volume that cannot be mounted
	// (pkg/kubelet/events/event.go FailedMountVolume).
	reasonFailedMount = "FailedMount"
)

// errMount marks a volume that cannot be mounted yet; the pod's containers wait
// (ContainerCreating) and the mount is retried with back-off.
var errMount = errors.New("volume not mountable")

// unmountedError is a claim the kubelet could not turn into a volume to mount (missing, being
// deleted, not bound), reported as pkg/kubelet/volumemanager/volume_manager.go
// WaitForAttachAndMount words it.
type unmountedError struct {
	volume, claim string
	err           error
}

func (e *unmountedError) Error() string {
	return fmt.Sprintf("unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: error processing PVC %s: %v",
		e.volume, e.volume, e.claim, e.err)
}

func (e *unmountedError) Unwrap() error { return e.err }

// failedMountMessage is the FailedMount event's message for err: syncPod's (pkg/kubelet/kubelet.go)
// for a claim not processed, the mount operation's for a volume that failed to mount.
func failedMountMessage(err error) string {
	var u *unmountedError
	if errors.As(err, &u) {
		return "Unable to attach or mount volumes: " + err.Error()
	}
	return err.Error()
}

// mountBackOff spaces a pod's attempts to mount its claims.
type mountBackOff struct {
	next  time.Time
	delay time.Duration
	err   error // the last failure, reported while waiting for the next attempt
}

// claimDir is the host directory mounted for the pod's PVC volume, empty until it is mounted.
func (w *podWorker) claimDir(volume string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.claims[volume]
}

// mountClaims mounts the pod's PVC volumes that are not mounted yet. A mounted volume stays
// mounted for the pod's life, as a kubelet does not remount a volume it set up. A failure is
// retried with back-off, each failed attempt a FailedMount Warning event on the pod.
func (w *podWorker) mountClaims(ctx context.Context, pod *corev1.Pod) error {
	var pending []*corev1.Volume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && w.claimDir(v.Name) == "" {
			pending = append(pending, v)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	if time.Now().Before(w.mountRetry.next) {
		return w.mountRetry.err
	}
	for _, v := range pending {
		dir, err := w.mountClaim(ctx, pod, v)
		if err != nil {
			w.mountRetry.delay = min(max(2*w.mountRetry.delay, mountBackOffInitial), mountBackOffMax)
			w.mountRetry.next = time.Now().Add(w.mountRetry.delay)
			w.mountRetry.err = fmt.Errorf("%w: %w", errMount, err)
			w.k.recorder.Event(pod, corev1.EventTypeWarning, reasonFailedMount, failedMountMessage(err))
			klog.FromContext(ctx).Info("Failed to mount volume", "volume", v.Name, "err", err.Error(), "retryIn", w.mountRetry.delay)
			return w.mountRetry.err
		}
		w.mu.Lock()
		w.claims[v.Name] = dir
		w.mu.Unlock()
		klog.FromContext(ctx).Info("Mounted volume", "volume", v.Name, "claim", v.PersistentVolumeClaim.ClaimName, "dir", dir)
	}
	w.mountRetry = mountBackOff{}
	return nil
}

// mountClaim resolves the PVC of volume v to the directory of its lab volume and sets its
// ownership for the pod's fsGroup. Its errors read as a kubelet's FailedMount events do.
func (w *podWorker) mountClaim(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	claim := v.PersistentVolumeClaim.ClaimName
	unprocessed := func(err error) error {
		return &unmountedError{volume: v.Name, claim: pod.Namespace + "/" + claim, err: err}
	}
	pvc, err := w.k.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", unprocessed(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	case err != nil:
		return "", fmt.Errorf("failed to get PVC %s/%s of volume %s: %w", pod.Namespace, claim, v.Name, err)
	case pvc.DeletionTimestamp != nil:
		return "", unprocessed(errors.New("PVC is being deleted"))
	case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "":
		return "", unprocessed(errors.New("PVC is not bound"))
	}
	pv, err := w.k.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", unprocessed(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err))
	}
	if w.k.opts.StorageDir == "" {
		return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q : the lab kubelet of node %s has no lab storage: PVC volumes are mounted only on a managed cluster's node", pv.Name, w.k.opts.NodeName)
	}
	dir, st, err := driver.PVVolume(w.k.opts.StorageDir, pv, w.k.opts.StorageDrivers)
	if err != nil {
		return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", pv.Name, err)
	}
	if !st.Writable() {
		return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q : rpc error: code = Internal desc = image %s is not primary (lab image role %q): it takes the peer's mirror and cannot be mapped read-write until it is promoted",
			pv.Name, pv.Spec.CSI.VolumeHandle, st.Role)
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", pv.Name, err)
	}
	if err := setVolumeOwnership(dir, pod.Spec.SecurityContext, v.PersistentVolumeClaim.ReadOnly); err != nil {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", pv.Name, err)
	}
	return dir, nil
}
