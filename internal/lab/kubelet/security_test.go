package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/lab/storage/state"
)

// ownerOf returns a file's gid and mode.
func ownerOf(g Gomega, path string) (uint32, uint32, os.FileMode) {
	info, err := os.Lstat(path)
	g.Expect(err).NotTo(HaveOccurred())
	st := info.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, info.Mode()
}

// securePod is claimPod run as a database's pod is: as its own user and group, with the pod's
// fsGroup (OnRootMismatch) and a supplemental group, and an emptyDir it writes too.
func securePod(ns, name, claim, mnt string) *corev1.Pod {
	pod := claimPod(ns, name, claim, mnt)
	onRootMismatch := corev1.FSGroupChangeOnRootMismatch
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000),
		FSGroupChangePolicy: &onRootMismatch, SupplementalGroups: []int64{4000},
	}
	scratch := mnt + "-scratch"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c := &pod.Spec.Containers[0]
	c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1001)} // the container's wins
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: scratch})
	c.Args = append(c.Args, "--write="+mnt+"/written,"+scratch+"/file")
	return pod
}

// TestSecurityContextSetsTheProcessIdentityAndTheVolumesGroup runs a pod as PostgreSQL's runs:
// its process has the container's runAsUser, the pod's runAsGroup and fsGroup and supplemental
// groups; its volume, owned by root, is given to the fsGroup recursively; a second pod finds the
// root already matching (OnRootMismatch) and changes nothing.
func TestSecurityContextSetsTheProcessIdentityAndTheVolumesGroup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	dir, pv := labVolume(g, ns, "data", state.RolePrimary)
	g.Expect(os.MkdirAll(filepath.Join(dir, "sub"), 0o755)).To(Succeed())
	createClaim(g, ns, "data", pv, true)
	mnt := mountPath(ns, "data")
	createPod(g, securePod(ns, "db", "data", mnt))
	readyPod(g, ns, "db")

	r := lastReport(g, ns, "db")
	g.Expect(r.IDs).To(Equal("uid=1001 gid=3000 groups=[2000 4000]"))
	g.Expect(r.Files).To(HaveKeyWithValue(mnt+"/seed", "seeded"))
	g.Expect(r.Writes).To(HaveKeyWithValue(mnt+"/written", "ok"), "the fsGroup may write the volume's root")
	g.Expect(r.Writes).To(HaveKeyWithValue(mnt+"-scratch/file", "ok"), "an emptyDir is writable by any user")
	_, gid, mode := ownerOf(g, dir)
	g.Expect(gid).To(BeEquivalentTo(2000))
	g.Expect(mode&(os.ModeSetgid|0o770)).To(Equal(os.ModeSetgid|0o770), "root %v", mode)
	_, gid, mode = ownerOf(g, filepath.Join(dir, "sub"))
	g.Expect(gid).To(BeEquivalentTo(2000))
	g.Expect(mode&(os.ModeSetgid|0o770)).To(Equal(os.ModeSetgid|0o770), "sub %v", mode)
	_, gid, mode = ownerOf(g, filepath.Join(dir, "seed"))
	g.Expect(gid).To(BeEquivalentTo(2000))
	g.Expect(mode.Perm()).To(Equal(os.FileMode(0o664)))
	uid, gid, _ := ownerOf(g, filepath.Join(dir, "written"))
	g.Expect([]uint32{uid, gid}).To(Equal([]uint32{1001, 2000}), "the file is the process's, in the setgid root's group")

	// The root matches now: a file the fsGroup does not own is left as it is.
	later := filepath.Join(dir, "later")
	g.Expect(os.WriteFile(later, []byte("root's"), 0o600)).To(Succeed())
	g.Expect(os.Chown(later, 0, 0)).To(Succeed()) // not the setgid root's group it inherited
	g.Expect(cs.CoreV1().Pods(ns).Delete(ctx, "db", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "db", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	createPod(g, securePod(ns, "db2", "data", mnt))
	readyPod(g, ns, "db2")
	_, gid, mode = ownerOf(g, later)
	g.Expect(gid).To(BeZero(), "OnRootMismatch skips the walk when the root matches")
	g.Expect(mode.Perm()).To(Equal(os.FileMode(0o600)))
}

func TestContainerCredentialTakesTheContainersUserOverThePods(t *testing.T) {
	podSC := &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
		FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000}}
	for _, c := range []struct {
		name      string
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		want      []string
	}{
		{"nothing set runs as the kubelet's root", nil, nil, nil},
		{"the pod's user, group, fsGroup and supplemental groups", podSC, nil,
			[]string{"setpriv", "--pdeathsig=keep", "--reuid=1000", "--regid=3000", "--groups=2000,4000", "--"}},
		{"the container's user and group win", podSC, &corev1.SecurityContext{RunAsUser: ptr.To[int64](26), RunAsGroup: ptr.To[int64](26)},
			[]string{"setpriv", "--pdeathsig=keep", "--reuid=26", "--regid=26", "--groups=2000,4000", "--"}},
		{"a user without a group runs with gid 0 and no supplementary groups", nil, &corev1.SecurityContext{RunAsUser: ptr.To[int64](26)},
			[]string{"setpriv", "--pdeathsig=keep", "--reuid=26", "--regid=0", "--clear-groups", "--"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: c.pod}}
			cred := containerCredential(pod, &corev1.Container{SecurityContext: c.container})
			if c.want == nil {
				g.Expect(cred).To(BeNil())
				return
			}
			g.Expect(cred).NotTo(BeNil())
			g.Expect(cred.setprivArgs("setpriv")).To(Equal(c.want))
		})
	}
}
