package kubelet

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/modroot"
)

func TestContainersDieWithAKilledKubeletProcess(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	root, err := modroot.Find()
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	bin := filepath.Join(dir, "labkubelet")
	build := exec.Command("go", "build", "-o", bin, "./internal/lab/kubelet/testdata/labkubelet")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	stateDir := filepath.Join(dir, "state")
	kubelet := startProcess(t, g, dir, "labkubelet", bin, "--kubeconfig="+writeKubeconfig(g, dir),
		"--node=lab-drover-process", "--image="+probeImage+"="+probeBin, "--state-dir="+stateDir,
		"--log-dir="+testLogDir, "--pod-cidr=127.102.0.0/24")

	pod := probePod(ns, "child")
	pod.Spec.NodeName = "lab-drover-process"
	createPod(g, pod)
	readyPod(g, ns, "child")
	states, err := ReadState(stateDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(states).To(HaveLen(1))
	pid := states[0].Containers[0].PID
	g.Expect(pid).NotTo(BeZero())

	g.Expect(kubelet.Process.Signal(syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() error { return syscall.Kill(pid, 0) }).Should(MatchError(syscall.ESRCH),
		"the container's process dies with its kubelet (Pdeathsig)")
}
