package storage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// writerClient returns an administrator client of a lab cluster.
func writerClient(g Gomega, cluster string) client.Client {
	return storagetest.Client(g, testLab, cluster)
}

func writerPVC(namespace, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(lab.BlockStorageClass),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
}

func TestWriterAppendsRecordsWhileTheImageIsWritableAndStopsWithThePod(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	cl := writerClient(g, lab.East)
	storageDir, err := testLab.StorageDir(lab.East)
	g.Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "writer"}}
	g.Expect(cl.Create(ctx, ns)).To(Succeed())
	g.Expect(cl.Create(ctx, writerPVC(ns.Name, "data"))).To(Succeed())
	pod := storagetest.WriterPod(ns.Name, "app", "data", 100*time.Millisecond)
	g.Expect(cl.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	}).Should(Succeed(), "the writer pod runs")

	var dir string
	g.Eventually(func(g Gomega) {
		var err error
		dir, err = testLab.VolumeDir(ctx, lab.East, ns.Name, "data")
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	handle, writer := filepath.Base(dir), storage.WriterID(pod)

	var first records.WriterReport
	g.Eventually(func(g Gomega) {
		first = storagetest.WriterRecords(g, dir, writer)
		g.Expect(first.Records).To(BeNumerically(">=", 5))
		g.Expect(first.FirstSeq).To(Equal(uint64(1)))
	}).Should(Succeed(), "records appear in the volume")
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, dir, writer).LastSeq).To(BeNumerically(">", first.LastSeq))
	}).Should(Succeed(), "the writer goes on writing")
	g.Eventually(func(g Gomega) {
		st := storagetest.WriterStatus(g, storageDir, pod)
		g.Expect(st.Handle).To(Equal(handle))
		g.Expect(st.Written).To(BeNumerically(">", 0))
		g.Expect(st.Rejected).To(BeZero())
	}).Should(Succeed(), "the status file counts the writes")

	// The test process writes the state the storage controller reads before every write.
	images, err := storage.NewImages(storageDir, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(images.SetState(handle, storage.ImageState{Role: storage.RoleSecondary})).To(Succeed())
	var rejecting storage.VolumeWriterStatus
	g.Eventually(func(g Gomega) {
		rejecting = storagetest.WriterStatus(g, storageDir, pod)
		g.Expect(rejecting.Rejected).To(BeNumerically(">", 0))
	}).Should(Succeed(), "writes to a secondary image are rejected")
	// The writer saw the secondary state before rejecting; it has written nothing since.
	frozen := storagetest.WriterRecords(g, dir, writer)
	g.Eventually(func(g Gomega) {
		st := storagetest.WriterStatus(g, storageDir, pod)
		g.Expect(st.Rejected).To(BeNumerically(">=", rejecting.Rejected+5))
		g.Expect(st.Written).To(Equal(rejecting.Written))
	}).Should(Succeed(), "rejected writes rise")
	g.Expect(storagetest.WriterRecords(g, dir, writer).Records).To(Equal(frozen.Records), "a secondary image gets no records")

	g.Expect(images.SetState(handle, storage.ImageState{Role: storage.RolePrimary})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, dir, writer).LastSeq).To(BeNumerically(">", frozen.LastSeq))
	}).Should(Succeed(), "the writer continues the log without a gap once the image is writable")

	g.Expect(cl.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st, err := storage.ReadWriterStatus(storageDir, pod.Namespace, pod.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Running).To(BeFalse())
	}).Should(Succeed(), "the writer stops when its pod is deleted")
	final := storagetest.WriterRecords(g, dir, writer)
	g.Consistently(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, dir, writer).Records).To(Equal(final.Records))
	}, time.Second, 100*time.Millisecond).Should(Succeed(), "the log stops growing")
}
