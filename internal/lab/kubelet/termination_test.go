package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// exitPod is a pod whose podprobe process exits as a Job's would, with those arguments after
// --exit.
func exitPod(ns, name string, restart corev1.RestartPolicy, policy corev1.TerminationMessagePolicy, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: DefaultNodeName, RestartPolicy: restart, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "job", Image: probeImage, Args: args, TerminationMessagePolicy: policy,
			}},
		},
	}
}

// numbered is what podprobe logs for --lines from first to last, each line width long.
func numbered(first, last, width int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "line %03d%s\n", i, strings.Repeat(".", width-8))
	}
	return b.String()
}

// TestAnEndedContainerReportsItsTerminationMessage runs processes that exit as a Job's do: each
// pod ends Succeeded or Failed, its container Terminated and not restarted, with the message
// the kubelet reads from the termination message file or, for FallbackToLogsOnError and a
// failure, from the end of the log of that run.
func TestAnEndedContainerReportsItsTerminationMessage(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	customPath := filepath.Join(t.TempDir(), "termination-message")
	long := strings.Repeat("a", 1000) + strings.Repeat("b", 4000)
	fallback := corev1.TerminationMessageFallbackToLogsOnError
	cases := []struct {
		pod      *corev1.Pod
		phase    corev1.PodPhase
		exitCode int32
		message  string
	}{
		{exitPod(ns, "message", corev1.RestartPolicyNever, corev1.TerminationMessageReadFile,
			"--exit=3", "--lines=5", "--message=0 rows in orders", "--message-file="+customPath),
			corev1.PodFailed, 3, "0 rows in orders"},
		{exitPod(ns, "long-message", corev1.RestartPolicyNever, corev1.TerminationMessageReadFile, "--exit=2", "--message="+long),
			corev1.PodFailed, 2, long[len(long)-maxTerminationMessage:]},
		{exitPod(ns, "log-short", corev1.RestartPolicyNever, fallback, "--exit=1", "--lines=3"),
			corev1.PodFailed, 1, numbered(1, 3, 8)},
		{exitPod(ns, "log-lines", corev1.RestartPolicyNever, fallback, "--exit=1", "--lines=100"),
			corev1.PodFailed, 1, numbered(21, 100, 8)},
		{exitPod(ns, "log-bytes", corev1.RestartPolicyNever, fallback, "--exit=1", "--lines=40", "--width=99"),
			corev1.PodFailed, 1, numbered(1, 40, 99)[40*100-maxTerminationLogBytes:]},
		{exitPod(ns, "no-fallback", corev1.RestartPolicyNever, corev1.TerminationMessageReadFile, "--exit=1", "--lines=3"),
			corev1.PodFailed, 1, ""},
		{exitPod(ns, "succeeded", corev1.RestartPolicyOnFailure, fallback, "--exit=0", "--lines=3"),
			corev1.PodSucceeded, 0, ""},
	}
	cases[0].pod.Spec.Containers[0].TerminationMessagePath = customPath
	for _, c := range cases {
		createPod(g, c.pod)
	}
	for _, c := range cases {
		t.Run(c.pod.Name, func(t *testing.T) {
			g := NewWithT(t)
			var cs corev1.ContainerStatus
			g.Eventually(func(g Gomega) {
				pod, err := getPod(ns, c.pod.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pod.Status.Phase).To(Equal(c.phase))
				g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
				cs = pod.Status.ContainerStatuses[0]
			}).Should(Succeed())
			g.Expect(cs.State.Terminated).NotTo(BeNil(), "the container is Terminated: %+v", cs.State)
			g.Expect(cs.RestartCount).To(BeZero(), "the restartPolicy starts it no more")
			g.Expect(cs.State.Terminated.ExitCode).To(Equal(c.exitCode))
			g.Expect(cs.State.Terminated.Message).To(Equal(c.message))
		})
	}
	data, err := os.ReadFile(customPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(BeEmpty(), "the message was written to the pod's own file, bound at the path only in its mount namespace")
}

func getPod(ns, name string) (*corev1.Pod, error) {
	return cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func TestLastLinesKeepsTheEndOfALog(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		n              int
	}{
		{"fewer lines than asked", "a\nb\n", "a\nb\n", 3},
		{"the last n lines", "a\nb\nc\n", "b\nc\n", 2},
		{"a last line without a newline counts", "a\nb\nc", "b\nc", 2},
		{"an empty log", "", "", 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lastLines(c.in, c.n); got != c.want {
				t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
			}
		})
	}
}
