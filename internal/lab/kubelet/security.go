package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// A pod's securityContext: the user, group and supplementary groups of its processes, and the
// ownership of its volumes for its fsGroup.

// Masks of the volume ownership change, as kubernetes/kubernetes pkg/volume/volume_linux.go
// applies them: group read-write (read-only for a read-only volume), group search and setgid on
// directories.
const (
	ownerRWMask   = os.FileMode(0o660)
	ownerROMask   = os.FileMode(0o440)
	ownerExecMask = os.FileMode(0o110)
)

// credential is the identity a container's process runs as.
type credential struct {
	uid, gid int64
	groups   []int64 // supplementary groups: the pod's fsGroup and supplementalGroups
}

// containerCredential is the identity of container c: runAsUser and runAsGroup of the container
// or else of the pod (uid and gid 0, the image's root, when neither sets them), with the pod's
// fsGroup and supplementalGroups as supplementary groups, as a container runtime sets them from
// the CRI's LinuxContainerSecurityContext. None (the kubelet's own identity, root) when nothing
// of it is set.
func containerCredential(pod *corev1.Pod, c *corev1.Container) *credential {
	var cred credential
	set := false
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			cred.uid, set = *psc.RunAsUser, true
		}
		if psc.RunAsGroup != nil {
			cred.gid, set = *psc.RunAsGroup, true
		}
		if psc.FSGroup != nil {
			cred.groups, set = append(cred.groups, *psc.FSGroup), true
		}
		if len(psc.SupplementalGroups) > 0 {
			cred.groups, set = append(cred.groups, psc.SupplementalGroups...), true
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			cred.uid, set = *sc.RunAsUser, true
		}
		if sc.RunAsGroup != nil {
			cred.gid, set = *sc.RunAsGroup, true
		}
	}
	if !set {
		return nil
	}
	return &cred
}

// setprivArgs is the command that drops to cred and execs the container's command: setpriv
// (util-linux), run by the mount script once its bind mounts (which need root) are done. Go's
// SysProcAttr.Credential cannot serve here: it takes effect before the child runs the script.
// Changing the uid from 0 clears every capability, as a non-root container has none. It also
// clears the parent-death signal, which --pdeathsig=keep sets again: the process still dies
// with the kubelet.
func (cred *credential) setprivArgs(setpriv string) []string {
	args := []string{setpriv, "--pdeathsig=keep",
		"--reuid=" + strconv.FormatInt(cred.uid, 10), "--regid=" + strconv.FormatInt(cred.gid, 10)}
	if len(cred.groups) == 0 {
		return append(args, "--clear-groups", "--")
	}
	groups := make([]string, len(cred.groups))
	for i, g := range cred.groups {
		groups[i] = strconv.FormatInt(g, 10)
	}
	return append(args, "--groups="+strings.Join(groups, ","), "--")
}

// setUpEmptyDir creates the pod's emptyDir volume once, world-writable as a kubelet makes it
// (pkg/volume/emptydir/empty_dir.go, mode 0777), owned for the pod's fsGroup.
func (w *podWorker) setUpEmptyDir(pod *corev1.Pod, volume string) error {
	if w.setUp[volume] {
		return nil
	}
	dir := w.volumeDir(volume)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("failed to create emptyDir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // an emptyDir is world-writable, as a kubelet makes it
		return fmt.Errorf("failed to open emptyDir %s to every user: %w", dir, err)
	}
	if err := setVolumeOwnership(dir, pod.Spec.SecurityContext, false); err != nil {
		return err
	}
	w.setUp[volume] = true
	return nil
}

// setVolumeOwnership gives a volume to the pod's fsGroup, as kubernetes/kubernetes
// pkg/volume/volume_linux.go (VolumeOwnership.ChangePermissions) does when a volume is set up:
// every file and directory gets the group fsGroup, group read-write (read for a read-only
// volume) and, for a directory, group search and setgid; symlinks keep their mode. With
// fsGroupChangePolicy OnRootMismatch nothing changes when the volume's root already has that
// group and those bits; the walk visits the root last, so an interrupted change is redone.
// Nothing happens without an fsGroup.
func setVolumeOwnership(dir string, psc *corev1.PodSecurityContext, readOnly bool) error {
	if psc == nil || psc.FSGroup == nil {
		return nil
	}
	gid := int(*psc.FSGroup)
	policy := psc.FSGroupChangePolicy
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch && !ownershipMismatch(dir, gid, readOnly) {
		return nil
	}
	mask := ownerRWMask
	if readOnly {
		mask = ownerROMask
	}
	return walkDeep(dir, func(path string, info os.FileInfo) error {
		if err := os.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("failed to give %s to fsGroup %d: %w", path, gid, err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | ownerExecMask
		}
		if err := os.Chmod(path, info.Mode()|m); err != nil {
			return fmt.Errorf("failed to open %s to fsGroup %d: %w", path, gid, err)
		}
		return nil
	})
}

// ownershipMismatch says whether the volume's root lacks the group gid, the group's bits or
// setgid (volume_linux.go requiresPermissionChange).
func ownershipMismatch(dir string, gid int, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int(st.Gid) != gid || !info.IsDir() {
		return true
	}
	want := ownerRWMask
	if readOnly {
		want = ownerROMask
	}
	want |= ownerExecMask
	return info.Mode().Perm()&want != want || info.Mode()&os.ModeSetgid == 0
}

// walkDeep calls fn for every file under root, a directory after its contents (so the root
// last).
func walkDeep(root string, fn func(string, os.FileInfo) error) error {
	info, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", root, err)
	}
	if info.IsDir() {
		entries, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("failed to read directory %s: %w", root, err)
		}
		for _, e := range entries {
			if err := walkDeep(filepath.Join(root, e.Name()), fn); err != nil {
				return err
			}
		}
	}
	return fn(root, info)
}
