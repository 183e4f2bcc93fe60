package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

const (
	// minBackOff and maxBackOff bound the delay before a process that exited is started again;
	// it doubles on each exit and resets once a process ran for backOffReset.
	minBackOff   = time.Second
	maxBackOff   = 30 * time.Second
	backOffReset = 10 * time.Second
	// mountScript runs as PID 1 of the container's new PID namespace, in its new mount
	// namespace: it mounts a /proc of that PID namespace and a /dev/shm of its own (as a
	// container runtime does: a container's POSIX shared memory goes with it); with a read-only
	// root filesystem it makes every mount but /proc, /sys and /dev read-only; it binds each
	// (source, target, ro|rw) triple up to "--" (targets exist: the kubelet created them),
	// changes to the working directory and execs the command (through setpriv when the
	// container runs as another user), so the pid the kubelet started is the container's process.
	// For a container of another user than root, the image's binary, whose host path that user
	// may not reach, is bound under entryDir, by its own name, in a tmpfs of the container's own.
	mountScript = `set -e
wd=$1; roroot=$2; entry=$3; shift 3
mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=64m shm /dev/shm
if [ -n "$entry" ]; then
  mount -t tmpfs -o nosuid,nodev,mode=0755,size=64k lab-kubelet "${entryDir}"
  : > "${entryDir}/${entry##*/}"
  mount --bind "$entry" "${entryDir}/${entry##*/}"
fi
if [ "$roroot" = 1 ]; then
  for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
    case "$mp" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac
    mount -o remount,bind,ro "$mp" 2>/dev/null || echo "lab kubelet: cannot make $mp read-only" >&2
  done
fi
while [ "$1" != "--" ]; do
  mount --bind "$1" "$2"
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$2"; else mount -o remount,bind,rw "$2"; fi
  shift 3
done
shift
cd "$wd"
exec "$@"`
)

// entryDir is where a container of another user than root finds its image's binary, by the
// binary's name: a directory of the machine, created once, on which each such container mounts
// a tmpfs of its own.
const entryDir = "/run/lab-kubelet"

// mount is a host directory (or file) bound at a path inside a container's mount namespace.
type mount struct {
	source, target string
	readOnly       bool
}

// container supervises the process of one container: it starts it, restarts it with back-off
// when it exits and the pod's restartPolicy says so, and records what a ContainerStatus reports.
type container struct {
	w    *podWorker
	spec *corev1.Container
	init bool // an init container: it runs to completion before the pod's containers start

	stopCh chan time.Duration
	done   chan struct{}

	mu          sync.Mutex
	supervising bool
	pid         int
	startedAt   time.Time
	running     bool
	restarts    int32
	logStart    int64                            // where the running process's output begins in the log
	last        *corev1.ContainerStateTerminated // the previous exit, of a process started again
	terminated  *corev1.ContainerStateTerminated // the exit of a process not started again
	waiting     *corev1.ContainerStateWaiting
	ready       bool
	readyProbe  probeState
	liveProbe   probeState
	env         []string    // the running process's environment, for exec probes
	cred        *credential // the running process's identity, for exec probes
}

func newContainer(w *podWorker, spec *corev1.Container, init bool, prev *corev1.ContainerStatus) *container {
	// Until it starts, a container waits in ContainerCreating, or PodInitializing in a pod with
	// init containers (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
	// convertToAPIContainerStatuses).
	reason := "ContainerCreating"
	if len(w.pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	c := &container{
		w: w, spec: spec, init: init, stopCh: make(chan time.Duration, 1), done: make(chan struct{}),
		waiting: &corev1.ContainerStateWaiting{Reason: reason},
	}
	if prev != nil {
		// A kubelet that stopped took its processes with it: starting them again is a restart.
		c.restarts = prev.RestartCount
		if prev.State.Running != nil {
			c.restarts++
		}
		c.last = prev.LastTerminationState.Terminated
		// A process that ended for good stays ended, as with a kubelet that restarts.
		if t := prev.State.Terminated; t != nil && !restarts(c.restartPolicy(w.pod), t.ExitCode) {
			c.terminated, c.waiting = t, nil
		}
	}
	return c
}

// restartPolicy is the pod's restartPolicy for a container, OnFailure for an init container of
// a pod whose policy is Always: an init container that completed is not run again.
func (c *container) restartPolicy(pod *corev1.Pod) corev1.RestartPolicy {
	if c.init && pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return corev1.RestartPolicyOnFailure
	}
	return pod.Spec.RestartPolicy
}

// completion says whether the container ended for good: completed (exit 0) or failed.
func (c *container) completion() (completed, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminated == nil {
		return false, false
	}
	return c.terminated.ExitCode == 0, c.terminated.ExitCode != 0
}

// startSupervisor starts the container's supervisor, unless it runs or the container ended.
func (c *container) startSupervisor() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminated != nil || c.supervising {
		return
	}
	c.supervising = true
	go c.supervise()
}

// supervise runs the process until stop, or until it exits and the pod's restartPolicy does not
// start it again. A process that cannot be started is retried whatever the policy says.
func (c *container) supervise() {
	defer close(c.done)
	backOff := time.Duration(0)
	for {
		cmd, exited, err := c.launch()
		if err != nil {
			c.setWaiting(launchReason(err), err.Error())
			klog.Background().Error(err, "Failed to start container", "pod", c.w.key, "container", c.spec.Name)
		} else {
			started := time.Now()
			select {
			case grace := <-c.stopCh:
				c.terminate(cmd, exited, grace)
				return
			case <-exited:
				if !c.exited(cmd, started) {
					return
				}
			}
			if time.Since(started) >= backOffReset {
				backOff = 0
			}
		}
		backOff = min(max(2*backOff, minBackOff), maxBackOff)
		select {
		case <-c.stopCh:
			return
		case <-time.After(backOff):
		}
		if err == nil { // a process that ran and exited is restarted; a failed start is retried
			c.mu.Lock()
			c.restarts++
			c.mu.Unlock()
		}
	}
}

var (
	// errUnknownImage marks a container whose image the lab cannot run.
	errUnknownImage = errors.New("unknown image")
	// errConfig marks a container whose environment or mounts cannot be resolved yet (a
	// ConfigMap or Secret it names is missing); its start is retried with back-off.
	errConfig = errors.New("container configuration")
)

func launchReason(err error) string {
	switch {
	case errors.Is(err, errUnknownImage):
		return "ErrImagePull"
	case errors.Is(err, errConfig):
		return "CreateContainerConfigError"
	}
	return "CreateContainerError"
}

// launch starts the container's process in namespaces of its own, with its mounts bound.
func (c *container) launch() (*exec.Cmd, chan struct{}, error) {
	w := c.w
	spec, err := c.prepare()
	if err != nil {
		return nil, nil, err
	}
	logFile, err := c.openLog()
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n==== %s starting %s\n", time.Now().Format(time.RFC3339), strings.Join(spec.command, " "))
	logStart, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to find the end of log %s: %w", c.logPath(), err)
	}
	cmd := exec.Command("/bin/sh", spec.scriptArgs()...) //nolint:gosec // the lab runs binaries it was given
	cmd.Env, cmd.Stdout, cmd.Stderr = spec.env, logFile, logFile
	cmd.SysProcAttr = containerSysProcAttr()
	if err := start(cmd); err != nil {
		return nil, nil, fmt.Errorf("failed to start %s: %w", spec.command[0], err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.mu.Lock()
	c.pid, c.startedAt, c.running, c.waiting, c.ready, c.logStart = cmd.Process.Pid, time.Now(), true, nil, false, logStart
	c.readyProbe, c.liveProbe = probeState{}, probeState{}
	c.env, c.cred = spec.env, spec.cred
	c.mu.Unlock()
	klog.Background().Info("Started container", "pod", w.key, "container", c.spec.Name, "pid", cmd.Process.Pid)
	w.k.writeState(context.Background())
	return cmd, exited, nil
}

// containerSysProcAttr puts a container's process in mount, PID and IPC namespaces of its own,
// as a container runtime does: it is PID 1 of its PID namespace, so when it ends the kernel
// kills every process it started, even those that left its process group (setsid), and it
// gets SIGTERM only if it handles it, as a container's first process. Go makes the new mount
// namespace's propagation private before the script binds the container's mounts. A
// container's namespaces are its own: its pod's other containers do not share them (a real
// pod's containers share the IPC namespace; they share a PID namespace only with
// shareProcessNamespace, which the lab does not support).
func containerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags:   syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
		Unshareflags: syscall.CLONE_NEWNS,
	}
}

// launchSpec is what a container's start needs, resolved from the pod.
type launchSpec struct {
	env     []string
	mounts  []mount
	command []string // the container's command, as it runs
	cred    *credential
	setpriv string // the setpriv binary, when cred is set
	entry   string // the image's binary, bound at entrypointPath, when cred is set
	wd      string
	roRoot  bool
}

// scriptArgs are the mount script's arguments: sh -c mountScript sh wd roRoot (source target
// mode)... -- [setpriv ... --] command...
func (s *launchSpec) scriptArgs() []string {
	roRoot := "0"
	if s.roRoot {
		roRoot = "1"
	}
	args := []string{"-c", strings.ReplaceAll(mountScript, "${entryDir}", entryDir), "sh", s.wd, roRoot, s.entry}
	for _, m := range s.mounts {
		mode := "rw"
		if m.readOnly {
			mode = "ro"
		}
		args = append(args, m.source, m.target, mode)
	}
	args = append(args, "--")
	if s.cred != nil {
		args = append(args, s.cred.setprivArgs(s.setpriv)...)
	}
	if s.entry != "" {
		return append(append(args, filepath.Join(entryDir, filepath.Base(s.entry))), s.command[1:]...)
	}
	return append(args, s.command...)
}

// reachableAs makes what a container of another user than root needs reachable by that user:
// its image's binary, bound under entryDir, and its mount points, whose directories on the
// machine get search permission for every user (a container runtime creates them 0755 in the
// container's own root filesystem; here they are the machine's, and one made 0750 would keep
// the user out of the volume mounted below it).
func (s *launchSpec) reachableAs(binary string) error {
	if err := os.MkdirAll(entryDir, 0o755); err != nil { //nolint:gosec // every container's user traverses it
		return fmt.Errorf("failed to create %s: %w", entryDir, err)
	}
	s.entry = binary
	for _, m := range s.mounts {
		for dir := filepath.Dir(m.target); ; dir = filepath.Dir(dir) {
			info, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("failed to read mount point directory %s: %w", dir, err)
			}
			if info.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(dir, info.Mode()|0o001); err != nil {
					return fmt.Errorf("failed to let every user search mount point directory %s: %w", dir, err)
				}
			}
			if dir == "/" {
				break
			}
		}
	}
	return nil
}

// prepare resolves the container's image, environment, mounts (creating their mount points),
// identity and command.
func (c *container) prepare() (*launchSpec, error) {
	w := c.w
	pod := w.currentPod()
	binary, ok := imageBinary(w.k.opts.Images, c.spec.Image)
	if !ok {
		return nil, fmt.Errorf("%w: the lab kubelet runs only the images %s, not %s: map it in the lab kubelet's Images", errUnknownImage, knownImages(w.k.opts.Images), c.spec.Image)
	}
	env, vars, err := w.containerEnv(context.Background(), pod, c.spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	mounts, err := w.mounts(pod, c.spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	termination, err := c.terminationMount()
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, termination...)
	hosts, err := w.hostsMount()
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, hosts...)
	for _, m := range mounts {
		if err := mountTarget(m); err != nil {
			return nil, err
		}
	}
	spec := &launchSpec{env: env, mounts: mounts, wd: c.spec.WorkingDir, cred: containerCredential(pod, c.spec)}
	if spec.wd == "" {
		spec.wd = "/"
	}
	if sc := c.spec.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		spec.roRoot = true
	}
	if spec.cred != nil {
		if spec.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return nil, fmt.Errorf("setpriv (util-linux) is missing: install it to run pods with a runAsUser, runAsGroup or fsGroup: %w", err)
		}
	}
	spec.command = argv(binary, c.spec, vars)
	if !w.k.opts.KeepWildcardBinds {
		spec.command = narrowWildcardBinds(spec.command, c.spec, w.ip.String())
	}
	if spec.cred != nil {
		if err := spec.reachableAs(binary); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

func (c *container) logPath() string {
	return LogPath(c.w.k.opts.LogDir, c.w.key.Namespace, c.w.key.Name, c.spec.Name)
}

// LogPath is where the lab kubelet writes a container's output.
func LogPath(logDir, namespace, pod, container string) string {
	return filepath.Join(logDir, fmt.Sprintf("%s_%s_%s.log", namespace, pod, container))
}

func (c *container) openLog() (*os.File, error) {
	f, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open log %s: %w", c.logPath(), err)
	}
	return f, nil
}

// exited records how the process ended, with its termination message, and says whether the
// pod's restartPolicy starts it again.
func (c *container) exited(cmd *exec.Cmd, started time.Time) bool {
	st := cmd.ProcessState
	term := &corev1.ContainerStateTerminated{
		ExitCode: int32(st.ExitCode()), Reason: "Completed", //nolint:gosec // an exit code is 0-255, or -1
		StartedAt: metav1.NewTime(started), FinishedAt: metav1.Now(),
		ContainerID: containerID(c.w, c.spec.Name, cmd.Process.Pid),
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		term.Signal = int32(ws.Signal()) //nolint:gosec // signal numbers are below 65
		term.ExitCode = 128 + term.Signal
	}
	if term.ExitCode != 0 {
		term.Reason = "Error"
	}
	c.mu.Lock()
	logStart := c.logStart
	c.mu.Unlock()
	term.Message = c.terminationMessage(term.ExitCode, logStart)
	restart := restarts(c.restartPolicy(c.w.currentPod()), term.ExitCode)
	c.mu.Lock()
	c.running, c.ready, c.pid = false, false, 0
	if restart {
		c.last = term
		c.waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off restarting failed container %s; see %s", c.spec.Name, c.logPath())}
	} else {
		c.terminated, c.waiting = term, nil
	}
	c.mu.Unlock()
	klog.Background().Info("Container exited", "pod", c.w.key, "container", c.spec.Name, "exitCode", term.ExitCode, "restart", restart)
	c.w.k.writeState(context.Background())
	return restart
}

func (c *container) setWaiting(reason, message string) {
	c.mu.Lock()
	c.waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
	c.mu.Unlock()
}

// terminate sends SIGTERM to the container's process and SIGKILL to its process group after
// grace. SIGTERM goes to the process alone, as a container runtime signals a container's first
// process only (runc kill without --all): a shell that traps it lets the command it waits for
// finish (pgbench ends its run and flushes its log), and a process it started does not die of
// it. SIGKILL ends the whole container: the first process of a PID namespace takes every other
// with it.
func (c *container) terminate(cmd *exec.Cmd, exited chan struct{}, grace time.Duration) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	c.mu.Lock()
	c.running, c.ready, c.pid = false, false, 0
	c.mu.Unlock()
}

// stop ends the supervisor, giving a running process grace after SIGTERM.
func (c *container) stop(grace time.Duration) {
	c.mu.Lock()
	supervising := c.supervising
	c.mu.Unlock()
	if !supervising {
		return
	}
	c.stopCh <- grace
	<-c.done
}

func containerID(w *podWorker, name string, pid int) string {
	return fmt.Sprintf("lab://%s/%s/%d", w.uid, name, pid)
}

// mounts lists what a container sees: its volumeMounts, unless a volume is mounted there or
// automounting is off the ServiceAccount directory, and the node's directories (NodeDirs).
func (w *podWorker) mounts(pod *corev1.Pod, c *corev1.Container) ([]mount, error) {
	var out []mount
	saMounted := false
	for _, vm := range c.VolumeMounts {
		vol := findVolume(pod, vm.Name)
		if vol == nil {
			return nil, fmt.Errorf("volume mount %s of container %s names no volume of the pod", vm.Name, c.Name)
		}
		src, ro := w.volumeDir(vm.Name), vm.ReadOnly || vol.EmptyDir == nil
		if vol.PersistentVolumeClaim != nil {
			if src = w.claimDir(vm.Name); src == "" {
				return nil, fmt.Errorf("volume %s of container %s is not mounted yet", vm.Name, c.Name)
			}
			ro = vm.ReadOnly || vol.PersistentVolumeClaim.ReadOnly
		}
		if vm.SubPath != "" {
			root := src
			src = filepath.Join(src, vm.SubPath)
			if vol.PersistentVolumeClaim != nil || vol.EmptyDir != nil {
				if err := makeSubPath(root, src); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, mount{source: src, target: vm.MountPath, readOnly: ro})
		saMounted = saMounted || filepath.Clean(vm.MountPath) == serviceAccountDir
	}
	if !saMounted && automountToken(pod) {
		out = append(out, mount{source: w.saDir(), target: serviceAccountDir, readOnly: true})
	}
	for _, d := range w.k.opts.NodeDirs {
		out = append(out, mount{source: d.Source, target: d.Target})
	}
	return out, nil
}

// makeSubPath creates a subPath of a writable volume that does not exist yet, with the mode of
// the volume's root, as a kubelet does (pkg/kubelet/kubelet_pods.go makeMounts, SafeMakeDir).
func makeSubPath(root, dir string) error {
	info, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("failed to read volume %s: %w", root, err)
	}
	if err := os.MkdirAll(dir, info.Mode().Perm()); err != nil {
		return fmt.Errorf("failed to create subPath %s: %w", dir, err)
	}
	return nil
}

// mountTarget creates the directory (or, for a file, the empty file) that m is bound onto. It is
// created on the machine's filesystem, where it stays empty: the binding exists only in the
// container's mount namespace.
func mountTarget(m mount) error {
	info, err := os.Stat(m.source)
	if err != nil {
		return fmt.Errorf("failed to find the source %s of mount %s: %w", m.source, m.target, err)
	}
	if info.IsDir() {
		if err := os.MkdirAll(m.target, 0o755); err != nil { //nolint:gosec // a container's user of any uid traverses it
			return fmt.Errorf("failed to create mount point %s: %w", m.target, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(m.target), 0o755); err != nil { //nolint:gosec // a container's user of any uid traverses it
		return fmt.Errorf("failed to create mount point %s: %w", m.target, err)
	}
	f, err := os.OpenFile(m.target, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return fmt.Errorf("failed to create mount point %s: %w", m.target, err)
	}
	return f.Close()
}

func findVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
