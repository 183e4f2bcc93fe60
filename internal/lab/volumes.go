package lab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// volumeLookupTimeout bounds each API call that resolves a PVC to its volume, so a stopped
// cluster fails fast.
const volumeLookupTimeout = 10 * time.Second

// StorageDir is the data directory of a managed cluster's lab storage (volumes/, images/,
// writers/). It is on disk whether or not the cluster runs.
func (l *Lab) StorageDir(cluster string) (string, error) {
	c, err := l.Cluster(cluster)
	if err != nil {
		return "", err
	}
	if c.Role != RoleManaged {
		return "", fmt.Errorf("cluster %s has no lab storage: name a managed cluster, %s or %s", c.Name, East, West)
	}
	return c.storageDir(), nil
}

// ImageDir is the directory of the volume image with handle in a managed cluster's lab
// storage. A mirrored image has the same handle on both clusters.
func (l *Lab) ImageDir(cluster, handle string) (string, error) {
	dir, err := l.StorageDir(cluster)
	if err != nil {
		return "", err
	}
	return state.VolumePath(dir, handle), nil
}

// VolumeDir resolves the PVC namespace/pvc on a managed cluster to the directory of the lab
// volume bound to it, through the cluster's API with administrator rights.
func (l *Lab) VolumeDir(ctx context.Context, cluster, namespace, pvc string) (string, error) {
	c, err := l.Cluster(cluster)
	if err != nil {
		return "", err
	}
	if _, err := l.StorageDir(cluster); err != nil {
		return "", err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return "", err
	}
	cfg.Timeout = volumeLookupTimeout
	cl, err := client.New(cfg, client.Options{Scheme: l.scheme})
	if err != nil {
		return "", fmt.Errorf("failed to create client for cluster %s: %w", c.Name, err)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pvc}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("cluster %s has no PVC %s/%s: %w", c.Name, namespace, pvc, err)
		}
		return "", fmt.Errorf("failed to get PVC %s/%s on cluster %s (is it running? see `drover lab status`): %w", namespace, pvc, c.Name, err)
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("PVC %s/%s on cluster %s is not bound to a volume yet (phase %q)", namespace, pvc, c.Name, claim.Status.Phase)
	}
	pv := &corev1.PersistentVolume{}
	if err := cl.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		// Not wrapped: a missing PV must not read as a missing PVC to callers.
		return "", fmt.Errorf("failed to get PV %s of PVC %s/%s on cluster %s: %s", claim.Spec.VolumeName, namespace, pvc, c.Name, err.Error())
	}
	if pv.Spec.CSI == nil || (pv.Spec.CSI.Driver != BlockDriver && pv.Spec.CSI.Driver != FileDriver) {
		return "", fmt.Errorf("PVC %s/%s on cluster %s is bound to PV %s, which is not a lab volume (classes %s and %s provision lab volumes)",
			namespace, pvc, c.Name, pv.Name, BlockStorageClass, FileStorageClass)
	}
	return l.ImageDir(cluster, pv.Spec.CSI.VolumeHandle)
}
