package vrglab

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// StatefulSet builds a StatefulSet with one volumeClaimTemplate "data" of the lab's block class;
// its PVCs carry the label app=<name>.
func StatefulSet(namespace, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "lab/writer",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec:       PVCSpec(),
			}},
		},
	}
}

// PVCSpec is the spec of a 1Gi ReadWriteOnce PVC of the lab's block class.
func PVCSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(lab.BlockStorageClass),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceStorage: resource.MustParse("1Gi"),
		}},
	}
}

// WriterStatefulSet is StatefulSet with writer pods: the lab appends a record to each pod's
// volumes every interval.
func WriterStatefulSet(namespace, name string, replicas int32, interval time.Duration) *appsv1.StatefulSet {
	sts := StatefulSet(namespace, name, replicas)
	sts.Spec.Template.Labels[storage.WriterLabel] = "true"
	sts.Spec.Template.Annotations = map[string]string{storage.WriterIntervalAnnotation: interval.String()}
	return sts
}

// PrimaryVRG builds a primary VolumeReplicationGroup selecting PVCs labelled app=<app>, with
// every lab S3 profile, the lab's block driver replicated by VolRep.
func PrimaryVRG(namespace, name, app, interval string, profiles []v1alpha1.S3Profile) *v1alpha1.VolumeReplicationGroup {
	return &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState:     v1alpha1.ReplicationStatePrimary,
			PVCSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			S3Profiles:           profiles,
			SchedulingInterval:   v1alpha1.SchedulingInterval(interval),
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
		},
	}
}
