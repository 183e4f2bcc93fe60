package vrg

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestTheConsumerIndexesNameWhatAPodOrAnAttachmentUses(t *testing.T) {
	t.Run("a pod is indexed by every PVC its volumes name", func(t *testing.T) {
		g := NewWithT(t)
		pod := podUsing("db-0", "data-db-0", corev1.PodRunning)
		pod.Spec.Volumes = append(pod.Spec.Volumes,
			corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs-db-0"},
			}})
		g.Expect(podPVCs(pod)).To(Equal([]string{"data-db-0", "logs-db-0"}))
	})
	t.Run("a VolumeAttachment is indexed by its PV", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(volumeAttachmentPV(attachment("csi-0", "pv-0"))).To(Equal([]string{"pv-0"}))
	})
	t.Run("an inline VolumeAttachment names no PV", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(volumeAttachmentPV(&storagev1.VolumeAttachment{})).To(BeEmpty())
	})
	t.Run("another object is not indexed", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(podPVCs(&corev1.Secret{})).To(BeEmpty())
		g.Expect(volumeAttachmentPV(&corev1.Secret{})).To(BeEmpty())
	})
}
