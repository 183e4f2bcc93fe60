package vrg

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Field indexes of the agent's cache, registered once in SetupWithManager (indexConsumers).
const (
	// indexPodPVC indexes pods by the names of the PVCs their volumes name (in the pod's
	// namespace).
	indexPodPVC = "spec.volumes.persistentVolumeClaim.claimName"
	// indexVolumeAttachmentPV indexes VolumeAttachments by spec.source.persistentVolumeName.
	indexVolumeAttachmentPV = "spec.source.persistentVolumeName"
)

// indexConsumers registers the field indexes the consumer checks use.
func indexConsumers(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, indexPodPVC, podPVCs); err != nil {
		return fmt.Errorf("failed to index pods by PVC: %w", err)
	}
	if err := indexer.IndexField(ctx, &storagev1.VolumeAttachment{}, indexVolumeAttachmentPV, volumeAttachmentPV); err != nil {
		return fmt.Errorf("failed to index VolumeAttachments by PV: %w", err)
	}
	return nil
}

// podPVCs returns the names of the PVCs a pod's volumes name.
func podPVCs(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return names
}

// volumeAttachmentPV returns the PV a VolumeAttachment attaches, if it names one.
func volumeAttachmentPV(obj client.Object) []string {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok || va.Spec.Source.PersistentVolumeName == nil {
		return nil
	}
	return []string{*va.Spec.Source.PersistentVolumeName}
}

// consumers names what uses a PVC: the pods of its namespace whose volumes name it and have not
// terminated (a pod being deleted still runs until it is gone), and the VolumeAttachments of
// its PV. Empty when nothing does. fresh confirms an empty answer of the cache on the API
// server: a relocation re-checks after fencing, and a pod admitted just before the fence may
// not be in the cache yet. What the cache shows in use is in use (the wait ends with the watch
// event of its end), so a relocation waiting for its workload to stop reads nothing live.
func (r *Reconciler) consumers(ctx context.Context, pvc *corev1.PersistentVolumeClaim, fresh bool) ([]string, error) {
	out, err := r.listConsumers(ctx, pvc, false)
	if err != nil || len(out) > 0 || !fresh {
		return out, err
	}
	return r.listConsumers(ctx, pvc, true)
}

// listConsumers lists what uses a PVC from the cache or, live, from the API server (which cannot
// select pods by volume nor VolumeAttachments by PV, so they are filtered here).
func (r *Reconciler) listConsumers(ctx context.Context, pvc *corev1.PersistentVolumeClaim, live bool) ([]string, error) {
	pods := &corev1.PodList{}
	var err error
	if live {
		err = r.APIReader.List(ctx, pods, client.InNamespace(pvc.Namespace))
	} else {
		err = r.Client.List(ctx, pods, client.InNamespace(pvc.Namespace), client.MatchingFields{indexPodPVC: pvc.Name})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list the pods of PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	var out []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || !slices.Contains(podPVCs(pod), pvc.Name) {
			continue
		}
		out = append(out, "pod "+pod.Namespace+"/"+pod.Name)
	}
	if pvc.Spec.VolumeName == "" {
		return out, nil
	}
	vas := &storagev1.VolumeAttachmentList{}
	if live {
		err = r.APIReader.List(ctx, vas)
	} else {
		err = r.Client.List(ctx, vas, client.MatchingFields{indexVolumeAttachmentPV: pvc.Spec.VolumeName})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list the VolumeAttachments of PV %s: %w", pvc.Spec.VolumeName, err)
	}
	for i := range vas.Items {
		va := &vas.Items[i]
		if !slices.Contains(volumeAttachmentPV(va), pvc.Spec.VolumeName) {
			continue
		}
		out = append(out, fmt.Sprintf("VolumeAttachment %s (node %s)", va.Name, va.Spec.NodeName))
	}
	return out, nil
}

// podToVRGs maps a pod to the groups asked to be secondary of the PVCs it names, so a demotion
// waiting for the pod continues as soon as it is gone.
func (r *Reconciler) podToVRGs(ctx context.Context, obj client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, name := range podPVCs(obj) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, pvc); err != nil {
			continue
		}
		out = append(out, r.groupsOfPVC(ctx, pvc, waitsForConsumers)...)
	}
	return out
}

// volumeAttachmentToVRGs maps a VolumeAttachment to the groups asked to be secondary of its PV's
// claim.
func (r *Reconciler) volumeAttachmentToVRGs(ctx context.Context, obj client.Object) []reconcile.Request {
	names := volumeAttachmentPV(obj)
	if len(names) == 0 {
		return nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: names[0]}, pv); err != nil || pv.Spec.ClaimRef == nil {
		return nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name}, pvc); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("No PVC for a VolumeAttachment", "volumeAttachment", obj.GetName())
		return nil
	}
	return r.groupsOfPVC(ctx, pvc, waitsForConsumers)
}

// waitsForConsumers reports whether a group may wait for the consumers of its PVCs: only a
// demotion does (a group asked to be secondary). A primary's pass reads no pod and no
// VolumeAttachment, and each of the four to six changes of a restored workload's pod and
// attachment (created, scheduled, started, ready, attached) woke a whole pass of its group:
// at 100 groups failing over, hundreds of passes in the queue of the busiest agent.
func waitsForConsumers(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary
}

// inUseMessage says what uses a PVC and what must happen.
func inUseMessage(key string, users []string) string {
	return fmt.Sprintf("PVC %s is in use by %s: the workload must be stopped on this cluster; drover demotes the PVC once nothing uses it",
		key, strings.Join(users, ", "))
}
