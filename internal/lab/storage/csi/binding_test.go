package csi_test

import (
	"context"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// consumerPod is a pod on the lab's fake nodes that mounts a PVC.
func consumerPod(namespace, name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "lab/app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
}

// wffcClaim is a file PVC of the lab's WaitForFirstConsumer class.
func wffcClaim(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	pvc.Spec.StorageClassName = ptr.To(lab.FileWFFCStorageClass)
	return pvc
}

// staysPending checks that a PVC is not provisioned while nothing uses it. The lab provisions an
// Immediate PVC within a second; three seconds without a volume is the class's doing.
func staysPending(g Gomega, cl client.Client, namespace, name string) {
	g.Consistently(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimPending))
		g.Expect(pvc.Spec.VolumeName).To(BeEmpty())
	}).WithTimeout(3*time.Second).WithPolling(storagetest.Polling).Should(Succeed(),
		"PVC %s/%s of a WaitForFirstConsumer class stays Pending while no pod uses it", namespace, name)
}

// TestAWaitForFirstConsumerClaimIsProvisionedOnlyForItsFirstPod shows the lab's WaitForFirstConsumer
// class as EBS, GCE PD and Azure Disk bind: a new PVC, and one restored from a snapshot, stay
// Pending until a pod that uses them is scheduled (the scheduler's selected-node annotation);
// then each is provisioned, from its snapshot's data for the restore, and its pod runs.
func TestAWaitForFirstConsumerClaimIsProvisionedOnlyForItsFirstPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east := storagetest.Client(g, testLab, lab.East)
	ns := storagetest.Namespace(t, g, east)

	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "source"))).To(Succeed())
	files := storagetest.Tree{"a.txt": []byte("restored\n"), "dir/b.bin": storagetest.RandomBytes(g, 4096)}
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "source"), files)
	g.Expect(east.Create(ctx, &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("source")}},
	})).To(Succeed())
	awaitSnapshot(g, east, ns, "snap", false)

	g.Expect(east.Create(ctx, wffcClaim(storagetest.FileClaim(ns, "new")))).To(Succeed())
	g.Expect(east.Create(ctx, wffcClaim(storagetest.RestoredClaim(ns, "restored", "snap")))).To(Succeed())
	staysPending(g, east, ns, "new")
	staysPending(g, east, ns, "restored")

	for _, claim := range []string{"new", "restored"} {
		g.Expect(east.Create(ctx, consumerPod(ns, "use-"+claim, claim))).To(Succeed())
	}
	for _, claim := range []string{"new", "restored"} {
		pod := &corev1.Pod{}
		g.Eventually(func(g Gomega) {
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "use-" + claim}, pod)).To(Succeed())
			g.Expect(pod.Spec.NodeName).NotTo(BeEmpty())
		}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the pod using PVC %s is scheduled", claim)
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, pvc)).To(Succeed())
		g.Expect(pvc.Annotations).To(HaveKeyWithValue("volume.kubernetes.io/selected-node", pod.Spec.NodeName),
			"the scheduler chose the node of the PVC's first consumer")
	}
	g.Expect(storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "restored"))).To(Equal(files), "the restore holds the snapshot's data")
	storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "new")
}
