package csi

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Delayed binding, as the real parts do it. A StorageClass with volumeBindingMode
// WaitForFirstConsumer leaves its PVCs Pending until a pod that uses them is scheduled:
//   - kube-controller-manager's PV controller does nothing with such a PVC (it emits the event
//     WaitForFirstConsumer) until the PVC carries the annotation volume.kubernetes.io/selected-node
//     (k8s.io/kubernetes pkg/controller/volume/persistentvolume/pv_controller.go, syncUnboundClaim,
//     with IsDelayBindingMode and IsDelayBindingProvisioning of
//     k8s.io/component-helpers storage/volume/pv_helpers.go);
//   - kube-scheduler's VolumeBinding plugin sets that annotation, to the node it chose, in
//     PreBind of a pod that uses the PVC, and binds the pod only once the PVC is Bound
//     (pkg/scheduler/framework/plugins/volumebinding/binder.go, BindPodVolumes, checkBindings);
//   - external-provisioner provisions a PVC of such a class only once it carries the annotation
//     (sig-storage-lib-external-provisioner, controller.go shouldProvision), restores from a
//     snapshot (dataSourceRef) included: a snapshot deleted before the pod arrives leaves the PVC
//     Pending for good.
//
// The lab runs the real PV controller and scheduler; its provisioner (provisioner.go, provision)
// takes the external-provisioner's part and waits as it does. The lab's volumes have no
// topology, so any node the scheduler picks will do and the PV gets no node affinity.

// annSelectedNode is the annotation kube-scheduler puts on a PVC of a WaitForFirstConsumer class
// for the node of the first pod that uses it.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// waitsForConsumer reports whether a PVC of class sc must not be provisioned yet: its class
// binds on the first consumer and no pod using it has been scheduled.
func waitsForConsumer(sc *storagev1.StorageClass, pvc *corev1.PersistentVolumeClaim) bool {
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return false
	}
	return pvc.Annotations[annSelectedNode] == ""
}
