package termination

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxLogTail is a drill check's bound on its log tail.
const maxLogTail = 4096

// checkPod is a check pod created age ago, its container "check" with the termination message
// policy and, when term is set, terminated so.
func checkPod(name string, age time.Duration, policy corev1.TerminationMessagePolicy, term *corev1.ContainerStateTerminated) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC).Add(-age))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "check",
			TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: policy}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if term != nil {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "check", State: corev1.ContainerState{Terminated: term}}}
	}
	return pod
}

func exit(code int32, message string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Message: message}
}

func TestMessage(t *testing.T) {
	fallback := corev1.TerminationMessageFallbackToLogsOnError
	restarted := checkPod("p-restarting", 0, fallback, nil)
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "check",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: exit(2, "connection refused")}}}
	twoContainers := checkPod("p-two", 0, fallback, exit(0, "sidecar done"))
	twoContainers.Status.ContainerStatuses = append(twoContainers.Status.ContainerStatuses,
		corev1.ContainerStatus{Name: "verify", State: corev1.ContainerState{Terminated: exit(1, "0 rows")}})
	long := "é" + strings.Repeat("x", 5000)
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"no pod left says so", nil, []string{"(no termination message: no pod of the Job is left"}},
		{"the newest pod's message, with its pod and container", []corev1.Pod{
			checkPod("p-old", time.Minute, fallback, exit(1, "old failure")),
			checkPod("p-new", 0, fallback, exit(1, "usage: unknown flag")),
		}, []string{"From container check of pod p-new (exit code 1):\nusage: unknown flag"}},
		{"an older pod's message when the newest has none", []corev1.Pod{
			checkPod("p-new", 0, fallback, nil),
			checkPod("p-old", time.Minute, fallback, exit(1, "old failure")),
		}, []string{"From container check of pod p-old (exit code 1):\nold failure"}},
		{"a failed container's message before one that succeeded", []corev1.Pod{twoContainers},
			[]string{"From container verify of pod p-two (exit code 1):\n0 rows"}},
		{"the message of the exit before a restart", []corev1.Pod{restarted},
			[]string{"From container check of pod p-restarting (exit code 2):\nconnection refused"}},
		{"an exit 0 without a message", []corev1.Pod{checkPod("p", 0, fallback, exit(0, ""))},
			[]string{"(no termination message: container check of pod p exited 0 and wrote none to /dev/termination-log"}},
		{"a failure under the File policy", []corev1.Pod{checkPod("p", 0, corev1.TerminationMessageReadFile, exit(1, ""))},
			[]string{"failed with exit code 1 and wrote none", "its terminationMessagePolicy is File"}},
		{"a failure whose node reported no log", []corev1.Pod{checkPod("p", 0, fallback, exit(1, ""))},
			[]string{"failed with exit code 1, wrote none to /dev/termination-log, and its node reported no end of its log"}},
		{"a pod whose container never ran", []corev1.Pod{checkPod("p", 0, fallback, nil)},
			[]string{"no container of pod p terminated (the pod is Pending)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Message(c.pods, maxLogTail)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("Message = %q, want it to contain %q", got, w)
				}
			}
		})
	}
	t.Run("a long message keeps its end within the bound", func(t *testing.T) {
		got := Message([]corev1.Pod{checkPod("p", 0, fallback, exit(1, long))}, maxLogTail)
		if len(got) > maxLogTail || !strings.HasPrefix(got, "From container check of pod p (exit code 1):\n…x") || !strings.HasSuffix(got, "xxx") {
			t.Errorf("Message of a %d-byte message = %d bytes %q...%q", len(long), len(got), got[:60], got[len(got)-10:])
		}
	})
}

func TestWithLogFallbackLeavesAChosenPolicy(t *testing.T) {
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "wait"}},
		Containers:     []corev1.Container{{Name: "check"}, {Name: "own", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
	}
	WithLogFallback(&spec)
	got := []corev1.TerminationMessagePolicy{spec.InitContainers[0].TerminationMessagePolicy,
		spec.Containers[0].TerminationMessagePolicy, spec.Containers[1].TerminationMessagePolicy}
	want := []corev1.TerminationMessagePolicy{corev1.TerminationMessageFallbackToLogsOnError,
		corev1.TerminationMessageFallbackToLogsOnError, corev1.TerminationMessageReadFile}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("policies = %v, want %v", got, want)
			break
		}
	}
}

func TestTailKeepsTheEndOnACharacterBoundaryAndMarksTheCut(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"short text is kept whole", "abc", "abc", 8},
		{"long text keeps its last bytes after the mark", "0123456789", "…789", 6},
		{"a character cut in two is dropped", "xxxxé", "…", 4},
		{"a cut at a character's start keeps it", "xxxxxé", "…é", 5},
		{"bytes that are not UTF-8 read as ?", "a\xffb", "a?b", 8},
		{"a bound below the mark leaves nothing", "0123456789", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tail(tc.in, tc.n); got != tc.want || len(got) > tc.n {
				t.Fatalf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
