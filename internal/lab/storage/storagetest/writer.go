package storagetest

import (
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// WriterPod builds a pod labelled for a lab writer, writing every interval to the PVC claim.
func WriterPod(namespace, name, claim string, interval time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        name,
			Labels:      map[string]string{storage.WriterLabel: "true"},
			Annotations: map[string]string{storage.WriterIntervalAnnotation: interval.String()},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "lab/writer",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
}

// WriterRecords verifies the volume dir and returns the report of writer, which has no gaps,
// corrupt or torn records.
func WriterRecords(g gomega.Gomega, dir, writer string) records.WriterReport {
	report, err := records.Verify(dir)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	w, ok := report.Writer(writer)
	g.Expect(ok).To(gomega.BeTrue(), "the volume has a log of %s", writer)
	g.Expect(w.Gaps).To(gomega.BeEmpty())
	g.Expect(w.Corrupt).To(gomega.BeEmpty())
	g.Expect(w.Torn).To(gomega.BeFalse())
	g.Expect(w.Duplicates).To(gomega.BeZero())
	return w
}

// WriterStatus reads the status of the pod's writer, which has one volume and no failure.
func WriterStatus(g gomega.Gomega, storageDir string, pod *corev1.Pod) storage.VolumeWriterStatus {
	st, err := storage.ReadWriterStatus(storageDir, pod.Namespace, pod.Name)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(st.UID).To(gomega.Equal(pod.UID))
	g.Expect(st.Volumes).To(gomega.HaveLen(1))
	g.Expect(st.Volumes[0].Failed).To(gomega.BeZero(), st.Volumes[0].LastError)
	return st.Volumes[0]
}
