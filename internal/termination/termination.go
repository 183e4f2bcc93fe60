// Package termination reads what a finished container leaves for whoever may not read its logs:
// its termination message in the pod's status, as the kubelet reports it in the container's
// state.terminated.message: what the container wrote to its terminationMessagePath (at most 4
// KiB) or, with terminationMessagePolicy FallbackToLogsOnError and a non-zero exit, the end of
// its log (80 lines, 2 KiB). A reader needs only to list the Job's pods, no right to read pod
// logs (pods/log). A drill's check and a recipe's Job hooks report their output so.
package termination

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WithLogFallback makes every container of the pod spec, where its template chose no
// terminationMessagePolicy (the API server would default it to File), report the end of its log
// when it fails without writing a termination message.
func WithLogFallback(spec *corev1.PodSpec) {
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			if containers[i].TerminationMessagePolicy == "" {
				containers[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
		}
	}
}

// OfJob lists the Job's pods (by the Job controller's job-name label) and returns their Message
// in at most max bytes.
func OfJob(ctx context.Context, reader client.Reader, job *batchv1.Job, max int) (string, error) {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", fmt.Errorf("failed to list the pods of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return Message(pods.Items, max), nil
}

// Message is the termination message of the newest of a Job's pods that has one, naming its
// pod and container (a failed container's first), in at most max bytes (its end kept); else a
// sentence that says why there is none.
func Message(pods []corev1.Pod, max int) string {
	if len(pods) == 0 {
		return "(no termination message: no pod of the Job is left to read one from; the Job's message says how it ended)"
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return pods[i].Name > pods[j].Name
	})
	for i := range pods {
		if name, term := messageOf(&pods[i]); term != nil {
			head := fmt.Sprintf("From container %s of pod %s (exit code %d):\n", name, pods[i].Name, term.ExitCode)
			return head + Tail(term.Message, max-len(head))
		}
	}
	return noMessage(&pods[0])
}

// messageOf returns the container of the pod with a termination message, a failed one first.
func messageOf(pod *corev1.Pod) (string, *corev1.ContainerStateTerminated) {
	var name string
	var found *corev1.ContainerStateTerminated
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		term := terminatedState(cs)
		if term == nil || term.Message == "" {
			continue
		}
		if term.ExitCode != 0 {
			return cs.Name, term
		}
		if found == nil {
			name, found = cs.Name, term
		}
	}
	return name, found
}

// terminatedState is the container's last exit: its state, or before it restarted.
func terminatedState(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if cs.State.Terminated != nil {
		return cs.State.Terminated
	}
	return cs.LastTerminationState.Terminated
}

// noMessage says why the newest pod reported no termination message.
func noMessage(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		term := terminatedState(cs)
		if term == nil {
			continue
		}
		path, policy := terminationSettings(pod, cs.Name)
		if term.ExitCode == 0 {
			return fmt.Sprintf("(no termination message: container %s of pod %s exited 0 and wrote none to %s; the end of a log is reported only for a container that fails)",
				cs.Name, pod.Name, path)
		}
		if policy != corev1.TerminationMessageFallbackToLogsOnError {
			return fmt.Sprintf("(no termination message: container %s of pod %s failed with exit code %d and wrote none to %s; its terminationMessagePolicy is %s, so the end of its log is not reported: leave the policy empty or set FallbackToLogsOnError)",
				cs.Name, pod.Name, term.ExitCode, path, policy)
		}
		return fmt.Sprintf("(no termination message: container %s of pod %s failed with exit code %d, wrote none to %s, and its node reported no end of its log (a node that runs no processes, such as a kwok node, reports none))",
			cs.Name, pod.Name, term.ExitCode, path)
	}
	return fmt.Sprintf("(no termination message: no container of pod %s terminated (the pod is %s); the Job's message says how it ended)", pod.Name, podPhase(pod))
}

// terminationSettings are the container's terminationMessagePath and policy.
func terminationSettings(pod *corev1.Pod, name string) (string, corev1.TerminationMessagePolicy) {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.TerminationMessagePath, c.TerminationMessagePolicy
		}
	}
	return corev1.TerminationMessagePathDefault, corev1.TerminationMessageReadFile
}

func podPhase(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return string(pod.Status.Phase) + " and being deleted"
	}
	return string(pod.Status.Phase)
}

// Tail is the end of s in at most n bytes, cut at the start of a character and marked "…" when
// cut; bytes that are not UTF-8 read as "?".
func Tail(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	if n < len(mark) {
		return ""
	}
	tail := s[len(s)-(n-len(mark)):]
	for tail != "" && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return mark + tail
}
