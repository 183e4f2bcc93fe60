package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestExecProbesRunInsideTheContainer probes as pg_isready would: the readiness command checks a
// file in the container's emptyDir (visible only in its mount namespace), as the container's
// user, and that it runs in the container's PID namespace; the liveness command fails once the
// container marks itself sick, and the container is restarted.
func TestExecProbesRunInsideTheContainer(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	mnt := mountPath(ns, "state")
	gates := t.TempDir()
	g.Expect(os.Chmod(gates, 0o755)).To(Succeed())
	g.Expect(os.Chmod(filepath.Dir(gates), 0o755)).To(Succeed())
	ready, sick := filepath.Join(gates, "ready"), filepath.Join(gates, "sick")
	script := fmt.Sprintf(`trap 'exit 0' TERM
while :; do
  if [ -e %s ]; then touch %s/ready; fi
  if [ -e %s ]; then touch %s/sick; fi
  sleep 0.2
done`, ready, mnt, sick, mnt)
	pod := shellPod(ns, "probed", script)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000)}
	pod.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: mnt}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", fmt.Sprintf(`test -e %s/ready && test "$(id -u)" = 1000 && test "$(cat /proc/1/comm)" = sh`, mnt)}}}}
	c.LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", fmt.Sprintf("test ! -e %s/sick", mnt)}}}}
	createPod(g, pod)

	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "probed")
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(got.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(fetchPod(g, ns, "probed").Status.ContainerStatuses[0].Ready).To(BeFalse())
	}, 3*time.Second).Should(Succeed(), "the readiness probe fails until the container is ready")

	g.Expect(os.WriteFile(ready, nil, 0o600)).To(Succeed())
	readyPod(g, ns, "probed")
	_, err := os.Stat(filepath.Join(mnt, "ready"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the file the probe found is in the container's mount namespace only")

	g.Expect(os.WriteFile(sick, nil, 0o600)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cs := fetchPod(g, ns, "probed").Status.ContainerStatuses[0]
		g.Expect(cs.RestartCount).To(BeNumerically(">=", 1))
		g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
	}).Should(Succeed())
}
