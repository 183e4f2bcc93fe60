package kubelet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A container's termination message, as the kubelet reports it in state.terminated.message.
// Modelled on kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go (makeMounts
// creates the file and binds it at terminationMessagePath; getTerminationMessage and
// readLastStringFromContainerLogs read it at exit), with the limits of
// pkg/kubelet/container/runtime.go and the per-pod bound of normalizeStatus in
// pkg/kubelet/status/status_manager.go.
const (
	// maxTerminationMessage is how much of the termination message file is read: its last 4 KiB.
	maxTerminationMessage = 4 * 1024
	// maxTerminationLogBytes and maxTerminationLogLines bound the log's tail that stands in for
	// the message (FallbackToLogsOnError): its last 80 lines, of which the last 2 KiB.
	maxTerminationLogBytes = 2 * 1024
	maxTerminationLogLines = 80
	// maxPodTerminationMessages is shared by the pod's containers: each keeps the first
	// 12 KiB / (number of containers) bytes of its message.
	maxPodTerminationMessages = 12 * 1024
)

// terminationFile is the host file bound at the container's terminationMessagePath: one per
// container, emptied before each start, as the kubelet makes a new one for each instance.
func (c *container) terminationFile() string {
	return filepath.Join(c.w.dir, "termination", c.spec.Name)
}

// terminationMount empties the container's termination message file and returns its mount at
// terminationMessagePath; none when the path is empty (the API server defaults it to
// /dev/termination-log).
func (c *container) terminationMount() ([]mount, error) {
	if c.spec.TerminationMessagePath == "" {
		return nil, nil
	}
	path := c.terminationFile()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("failed to create the termination message directory of container %s: %w", c.spec.Name, err)
	}
	// World-writable, as the kubelet makes it, so a process of any user may write its message.
	if err := os.WriteFile(path, nil, 0o666); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("failed to create the termination message file of container %s: %w", c.spec.Name, err)
	}
	if err := os.Chmod(path, 0o666); err != nil { //nolint:gosec // the umask must not narrow it
		return nil, fmt.Errorf("failed to open the termination message file of container %s: %w", c.spec.Name, err)
	}
	return []mount{{source: path, target: c.spec.TerminationMessagePath}}, nil
}

// terminationMessage is what the kubelet reports of a process that exited with exitCode: the
// end of its termination message file or, when that is empty, the policy is
// FallbackToLogsOnError and the process failed, the tail of what it logged since logStart (the
// offset where this start's output began in the container's log).
func (c *container) terminationMessage(exitCode int32, logStart int64) string {
	fallback := c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && exitCode != 0
	if c.spec.TerminationMessagePath != "" {
		data, err := readTail(c.terminationFile(), 0, maxTerminationMessage)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Sprintf("failed to read the termination message file %s: %v", c.terminationFile(), err)
		case len(data) > 0 || !fallback:
			return string(data)
		}
	}
	if !fallback {
		return ""
	}
	data, err := readTail(c.logPath(), logStart, maxTerminationLogBytes)
	if err != nil {
		return fmt.Sprintf("failed to read the termination message from the log %s: %v", c.logPath(), err)
	}
	return lastLines(string(data), maxTerminationLogLines)
}

// readTail reads at most limit bytes from the end of the file, none before offset from.
func readTail(path string, from, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := max(from, info.Size()-limit, 0)
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// lastLines returns the last n lines of s (a final newline ends the last line, it starts none).
func lastLines(s string, n int) string {
	body := strings.TrimSuffix(s, "\n")
	cut := len(body)
	for range n {
		j := strings.LastIndexByte(body[:cut], '\n')
		if j < 0 {
			return s
		}
		cut = j
	}
	return s[cut+1:]
}

// restarts says whether the pod's restartPolicy starts a container again that exited with
// exitCode: Always does, OnFailure after a failure, Never does not.
func restarts(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// limitMessages cuts each container's termination messages to its share of the pod's bound, the
// pod's every container (init and ephemeral ones too) counted.
func limitMessages(pod *corev1.Pod, st *corev1.PodStatus) {
	n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers)
	if n == 0 {
		return
	}
	share := maxPodTerminationMessages / n
	statuses := append(append([]*corev1.ContainerStatus{}, pointers(st.InitContainerStatuses)...), pointers(st.ContainerStatuses)...)
	for _, cs := range statuses {
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && len(t.Message) > share {
				t.Message = t.Message[:share]
			}
		}
	}
}

func pointers(statuses []corev1.ContainerStatus) []*corev1.ContainerStatus {
	out := make([]*corev1.ContainerStatus, len(statuses))
	for i := range statuses {
		out[i] = &statuses[i]
	}
	return out
}
