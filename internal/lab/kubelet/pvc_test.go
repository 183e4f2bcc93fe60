package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// labVolume creates the directory of a lab volume in the suite's storage (with a file "seed"),
// its image state with role, and a PV of the test driver for it; it returns the volume's
// directory and the PV's name.
func labVolume(g Gomega, ns, claim string, role state.ImageRole) (string, string) {
	handle := ns + "-" + claim
	dir := state.VolumePath(testStorageDir, handle)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "seed"), []byte("seeded"), 0o644)).To(Succeed())
	setRole(g, handle, role)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: testDriver, VolumeHandle: handle}},
		},
	}
	_, err := cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return dir, pv.Name
}

func setRole(g Gomega, handle string, role state.ImageRole) {
	g.Expect(state.Write(state.ImagePath(testStorageDir, handle), state.ImageState{Role: role})).To(Succeed())
}

// createClaim creates a PVC naming the PV, bound (as the PV controller would mark it) when bound.
func createClaim(g Gomega, ns, claim, pv string, bound bool) {
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	if bound {
		bindClaim(g, ns, claim)
	}
}

func bindClaim(g Gomega, ns, claim string) {
	ctx := context.Background()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pvc.Status.Phase = corev1.ClaimBound
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// claimPod is probePod with the claim mounted read-write at mnt and read-only at mnt-ro; it
// tries to write a file in each and reports the volume's seed file.
func claimPod(ns, name, claim, mnt string) *corev1.Pod {
	pod := probePod(ns, name)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "data", MountPath: mnt},
		corev1.VolumeMount{Name: "data", MountPath: mnt + "-ro", ReadOnly: true})
	c.Args = []string{"--bind=$(POD_IP):8081", "--file=" + mnt + "/seed", "--write=" + mnt + "/written," + mnt + "-ro/refused"}
	return pod
}

// mountPath is a mount point for the test's pod under the suite's directory, which every user
// may search.
func mountPath(ns, name string) string { return filepath.Join(testTmp, "mnt", ns, name) }

func TestPVCVolumeIsTheLabVolumeOfItsPVMountedReadWrite(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	dir, pv := labVolume(g, ns, "data", state.RolePrimary)
	createClaim(g, ns, "data", pv, true)
	mnt := mountPath(ns, "data")
	createPod(g, claimPod(ns, "claimed", "data", mnt))
	readyPod(g, ns, "claimed")

	r := lastReport(g, ns, "claimed")
	g.Expect(r.Files).To(HaveKeyWithValue(mnt+"/seed", "seeded"), "the pod sees the lab volume's data")
	g.Expect(r.Writes).To(HaveKeyWithValue(mnt+"/written", "ok"))
	g.Expect(r.Writes[mnt+"-ro/refused"]).To(ContainSubstring("read-only file system"), "readOnly is honoured")
	data, err := os.ReadFile(filepath.Join(dir, "written"))
	g.Expect(err).NotTo(HaveOccurred(), "the pod's write lands in the lab volume's directory")
	g.Expect(string(data)).To(Equal("x"))
	_, err = os.Stat(filepath.Join(dir, "refused"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}

// failedMounts lists the messages of the pod's FailedMount events.
func failedMounts(g Gomega, ns, pod string) []string {
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": "FailedMount"}.String()})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range list.Items {
		g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(e.Source.Component).To(Equal("kubelet"))
		out = append(out, e.Message)
	}
	return out
}

// creating asserts that the pod's container waits to be created, not started.
func creating(g Gomega, ns, name string) {
	got, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
	g.Expect(got.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
	g.Expect(got.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("ContainerCreating"))
	g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(BeZero())
}

// TestPVCVolumeWaitsUntilItsClaimIsBoundAndItsImagePrimary follows a pod started where its
// volume is not usable yet: its claim not bound, then bound to an image that is a mirror's
// secondary; the container waits, each failed mount a FailedMount event, until the image is
// promoted.
func TestPVCVolumeWaitsUntilItsClaimIsBoundAndItsImagePrimary(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	dir, pv := labVolume(g, ns, "data", state.RoleSecondary)
	createClaim(g, ns, "data", pv, false)
	mnt := mountPath(ns, "data")
	createPod(g, claimPod(ns, "waiting", "data", mnt))
	g.Eventually(func(g Gomega) {
		creating(g, ns, "waiting")
		g.Expect(failedMounts(g, ns, "waiting")).To(ContainElement(And(
			HavePrefix("Unable to attach or mount volumes: unmounted volumes=[data]"),
			HaveSuffix("error processing PVC "+ns+"/data: PVC is not bound"))))
	}).Should(Succeed())

	bindClaim(g, ns, "data")
	g.Eventually(func(g Gomega) {
		creating(g, ns, "waiting")
		g.Expect(failedMounts(g, ns, "waiting")).To(ContainElement(And(
			HavePrefix(`MountVolume.MountDevice failed for volume "`+pv+`"`), ContainSubstring("not primary"))))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) { creating(g, ns, "waiting") }, "2s").Should(Succeed())
	_, err := os.Stat(filepath.Join(dir, "written"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "nothing ran against the secondary image")

	setRole(g, ns+"-data", state.RolePrimary)
	readyPod(g, ns, "waiting")
	g.Expect(lastReport(g, ns, "waiting").Writes).To(HaveKeyWithValue(mnt+"/written", "ok"))
	_, err = os.Stat(filepath.Join(dir, "written"))
	g.Expect(err).NotTo(HaveOccurred())
}
