package vrg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// The checked restore of PVs and PVCs (docs/security.md, "The S3 stores"). Whoever can write to
// a store writes the pvs/ and pvcs/ objects a promotion creates, and the workload's pods mount
// whatever PV its PVC binds, so the stored form is never trusted as to where the data lives:
//   - a PVC is restored only into the group's protected namespaces, without dataSource or
//     dataSourceRef (a restore binds the replicated volume, it populates nothing);
//   - a PV only as a CSI volume (no hostPath, NFS, local or other in-tree source) of a driver
//     that provisions a StorageClass of this cluster that the group's storageClassBackends
//     choose, pre-bound to that very PVC, and not with the volume handle of another PV of this
//     cluster (another application's volume);
//   - its secret references (nodeStageSecretRef and the others) come from the StorageClass's
//     parameters on this cluster, as the external-provisioner would set them
//     (kubernetes-csi/external-provisioner, pkg/controller/controller.go), never from the store.
// A refusal lands in the restore's conflicts with ReasonStoreObjectRefused, naming the store
// and the object; nothing is created from it.

// CSI secret parameters of a StorageClass, by the PV field they fill.
var csiSecretParameters = []struct {
	prefix string
	set    func(*corev1.CSIPersistentVolumeSource, *corev1.SecretReference)
}{
	{"csi.storage.k8s.io/controller-publish-secret", func(c *corev1.CSIPersistentVolumeSource, r *corev1.SecretReference) { c.ControllerPublishSecretRef = r }},
	{"csi.storage.k8s.io/node-stage-secret", func(c *corev1.CSIPersistentVolumeSource, r *corev1.SecretReference) { c.NodeStageSecretRef = r }},
	{"csi.storage.k8s.io/node-publish-secret", func(c *corev1.CSIPersistentVolumeSource, r *corev1.SecretReference) { c.NodePublishSecretRef = r }},
	{"csi.storage.k8s.io/controller-expand-secret", func(c *corev1.CSIPersistentVolumeSource, r *corev1.SecretReference) { c.ControllerExpandSecretRef = r }},
	{"csi.storage.k8s.io/node-expand-secret", func(c *corev1.CSIPersistentVolumeSource, r *corev1.SecretReference) { c.NodeExpandSecretRef = r }},
}

// refusal is the conflict of a stored object the checked restore refuses.
func refusal(store, key string, err error) restoreConflict {
	return restoreConflict{v1alpha1.ReasonStoreObjectRefused, objectstore.Refused(store, key, err).Error()}
}

// checkStoredPVC refuses a stored PVC outside the group's protected namespaces.
func checkStoredPVC(vrg *v1alpha1.VolumeReplicationGroup, store, prefix string, pvc *corev1.PersistentVolumeClaim) *restoreConflict {
	namespaces := protectedNamespaces(vrg)
	if slices.Contains(namespaces, pvc.Namespace) {
		return nil
	}
	c := refusal(store, PVCKey(prefix, pvc.Namespace, pvc.Name), fmt.Errorf(
		"PVC %s/%s is outside the group's protected namespaces [%s]", pvc.Namespace, pvc.Name, strings.Join(namespaces, ", ")))
	return &c
}

// checkedPV returns the PV to create from a stored one for the stored PVC, or the refusal.
// Errors are API failures.
func (r *Reconciler) checkedPV(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, store, prefix string,
	pvc *corev1.PersistentVolumeClaim, stored *corev1.PersistentVolume) (*corev1.PersistentVolume, *restoreConflict, error) {
	key := PVKey(prefix, stored.Name)
	refuse := func(format string, args ...any) (*corev1.PersistentVolume, *restoreConflict, error) {
		c := refusal(store, key, fmt.Errorf("PV %s "+format, append([]any{stored.Name}, args...)...))
		return nil, &c, nil
	}
	pv := restoredPV(stored)
	if why := pvSourceProblem(pv); why != "" {
		return refuse("%s", why)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != pvc.Namespace || ref.Name != pvc.Name {
		return refuse("is not claimed by PVC %s/%s, whose volume it is stored as", pvc.Namespace, pvc.Name)
	}
	class, why, err := r.classOfPV(ctx, vrg, pv)
	if err != nil || why != "" {
		if err != nil {
			return nil, nil, err
		}
		return refuse("%s", why)
	}
	if other, err := r.pvOfHandle(ctx, pv); err != nil || other != "" {
		if err != nil {
			return nil, nil, err
		}
		return refuse("has the volume handle of PV %s of this cluster: a restore never gives one volume to two PVs", other)
	}
	if err := setSecretRefs(pv, pvc, class); err != nil {
		return refuse("cannot take its secrets from StorageClass %s: %v", class.Name, err)
	}
	return pv, nil, nil
}

// pvSourceProblem says why a PV's volume source is not restored: anything but CSI alone.
func pvSourceProblem(pv *corev1.PersistentVolume) string {
	src := pv.Spec.PersistentVolumeSource
	if src.CSI == nil || src.CSI.Driver == "" || src.CSI.VolumeHandle == "" {
		return "is not a CSI volume with a driver and a volume handle: drover restores only CSI volumes, never a hostPath, NFS, local or other in-tree volume"
	}
	if (src != corev1.PersistentVolumeSource{CSI: src.CSI}) {
		return "has another volume source besides CSI: drover restores only CSI volumes"
	}
	return ""
}

// classOfPV returns the StorageClass of this cluster that a PV must belong to: the one it
// names, provisioned by its CSI driver, and chosen by the group's storageClassBackends. why
// says what is missing.
func (r *Reconciler) classOfPV(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, pv *corev1.PersistentVolume) (*storagev1.StorageClass, string, error) {
	name := pv.Spec.StorageClassName
	if name == "" {
		return nil, "names no StorageClass: drover restores only volumes of a StorageClass the group's storageClassBackends choose", nil
	}
	class := &storagev1.StorageClass{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, class)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("is of StorageClass %s, which this cluster does not have: create it (of provisioner %s) and the restore continues", name, pv.Spec.CSI.Driver), nil
	case err != nil:
		return nil, "", fmt.Errorf("failed to get StorageClass %s: %w", name, err)
	case class.Provisioner != pv.Spec.CSI.Driver:
		return nil, fmt.Sprintf("is of CSI driver %s, but StorageClass %s is provisioned by %s", pv.Spec.CSI.Driver, name, class.Provisioner), nil
	}
	if _, ok := v1alpha1.SelectBackend(vrg.Spec.StorageClassBackends, class.Name, class.Provisioner); !ok {
		return nil, fmt.Sprintf("is of StorageClass %s, which the group's storageClassBackends do not choose", name), nil
	}
	return class, "", nil
}

// pvOfHandle names another PV of this cluster with the same CSI driver and volume handle, or "".
func (r *Reconciler) pvOfHandle(ctx context.Context, pv *corev1.PersistentVolume) (string, error) {
	pvs := &corev1.PersistentVolumeList{}
	if err := r.Client.List(ctx, pvs); err != nil {
		return "", fmt.Errorf("failed to list PVs: %w", err)
	}
	for i := range pvs.Items {
		other := &pvs.Items[i]
		if other.Name == pv.Name || other.Spec.CSI == nil {
			continue
		}
		if other.Spec.CSI.Driver == pv.Spec.CSI.Driver && other.Spec.CSI.VolumeHandle == pv.Spec.CSI.VolumeHandle {
			return other.Name, nil
		}
	}
	return "", nil
}

// setSecretRefs replaces every secret reference of a PV by the one its StorageClass's
// parameters give for the PVC (none when the class has none).
func setSecretRefs(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	var errs []error
	for _, p := range csiSecretParameters {
		name, hasName := class.Parameters[p.prefix+"-name"]
		ns, hasNS := class.Parameters[p.prefix+"-namespace"]
		if !hasName && !hasNS {
			p.set(pv.Spec.CSI, nil)
			continue
		}
		ref := &corev1.SecretReference{}
		var err error
		if ref.Name, err = resolveSecretTemplate(name, pv, pvc); err == nil {
			ref.Namespace, err = resolveSecretTemplate(ns, pv, pvc)
		}
		if err != nil || ref.Name == "" || ref.Namespace == "" {
			errs = append(errs, fmt.Errorf("parameters %s-name and -namespace do not give a Secret (%q, %q)%s", p.prefix, name, ns, suffix(err)))
			continue
		}
		p.set(pv.Spec.CSI, ref)
	}
	return errors.Join(errs...)
}

// resolveSecretTemplate fills the external-provisioner's templates ${pv.name}, ${pvc.name} and
// ${pvc.namespace}; any other template is an error.
func resolveSecretTemplate(s string, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) (string, error) {
	out := strings.NewReplacer("${pv.name}", pv.Name, "${pvc.name}", pvc.Name, "${pvc.namespace}", pvc.Namespace).Replace(s)
	if strings.Contains(out, "${") {
		return "", fmt.Errorf("the template in %q is not one drover fills (${pv.name}, ${pvc.name}, ${pvc.namespace})", s)
	}
	return out, nil
}

func suffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
