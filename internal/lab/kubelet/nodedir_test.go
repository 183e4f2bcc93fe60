package kubelet

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A node directory is bound read-write into a container that does not name it, one of a
// non-root user too: what the container writes at the target lands in the machine's directory,
// and the target on the machine stays an empty mount point.
func TestANodeDirectoryIsBoundIntoEveryContainer(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	pod := shellPod(ns, "node-dir", "echo written > "+testNodeDirTarget+"/"+ns+" && exec sleep 600")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000)}
	createPod(g, pod)
	written := filepath.Join(testNodeDir, ns)
	g.Eventually(func() ([]byte, error) { return os.ReadFile(written) }).Should(Equal([]byte("written\n")),
		"the container wrote into the node directory")
	info, err := os.Stat(written)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Sys().(*syscall.Stat_t).Uid).To(BeEquivalentTo(1000), "written as the container's user")
	entries, err := os.ReadDir(testNodeDirTarget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "the target on the machine is only a mount point")
}
