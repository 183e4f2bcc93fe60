package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withInits gives the pod init containers of the shell image running those scripts.
func withInits(pod *corev1.Pod, scripts ...string) *corev1.Pod {
	for i, script := range scripts {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: fmt.Sprintf("init-%d", i+1), Image: shellImage, Command: []string{"sh", "-c", script}})
	}
	return pod
}

func fetchPod(g Gomega, ns, name string) *corev1.Pod {
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return pod
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// TestInitContainersRunInOrderToCompletionBeforeTheContainers follows PostgreSQL's initdb in an
// init container: the second init container starts once the first completed, and the pod's
// container once both did, seeing what they wrote; the status meanwhile is a kubelet's (Pending,
// Initialized False, the container waiting PodInitializing).
func TestInitContainersRunInOrderToCompletionBeforeTheContainers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	dir := t.TempDir()
	order, gate := filepath.Join(dir, "order"), filepath.Join(dir, "gate")
	pod := withInits(shellPod(ns, "initialized",
		fmt.Sprintf("echo main >> %s; trap 'exit 0' TERM; while :; do sleep 1; done", order)),
		fmt.Sprintf("echo first >> %s", order),
		fmt.Sprintf("echo second >> %s; while [ ! -e %s ]; do sleep 0.1; done", order, gate))
	createPod(g, pod)

	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "initialized")
		g.Expect(got.Status.Phase).To(Equal(corev1.PodPending))
		g.Expect(got.Status.InitContainerStatuses).To(HaveLen(2))
		first, second := got.Status.InitContainerStatuses[0], got.Status.InitContainerStatuses[1]
		g.Expect(first.State.Terminated).NotTo(BeNil())
		g.Expect(first.State.Terminated.Reason).To(Equal("Completed"))
		g.Expect(first.Ready).To(BeTrue())
		g.Expect(second.State.Running).NotTo(BeNil())
		g.Expect(got.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
		g.Expect(got.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("PodInitializing"))
		g.Expect(condition(got, corev1.PodInitialized)).To(And(
			HaveField("Status", corev1.ConditionFalse), HaveField("Reason", "ContainersNotInitialized"),
			HaveField("Message", "containers with incomplete status: [init-2]")))
	}).Should(Succeed())
	data, err := os.ReadFile(order)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("first\nsecond\n"), "the container waits for the init containers")

	g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed())
	got := readyPod(g, ns, "initialized")
	g.Expect(condition(got, corev1.PodInitialized).Status).To(Equal(corev1.ConditionTrue))
	g.Expect(got.Status.InitContainerStatuses).To(HaveLen(2))
	g.Expect(got.Status.InitContainerStatuses[1].State.Terminated).NotTo(BeNil())
	g.Eventually(func() (string, error) {
		data, err := os.ReadFile(order)
		return string(data), err
	}).Should(Equal("first\nsecond\nmain\n"))
}

// TestAFailedInitContainerIsRestartedOrFailsThePod: with restartPolicy Always an init container
// that fails runs again until it completes; with Never the pod fails and its container never
// starts.
func TestAFailedInitContainerIsRestartedOrFailsThePod(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	tried := filepath.Join(t.TempDir(), "tried")
	main := "trap 'exit 0' TERM; while :; do sleep 1; done"
	createPod(g, withInits(shellPod(ns, "retried", main),
		fmt.Sprintf("if [ -e %s ]; then exit 0; fi; touch %s; exit 1", tried, tried)))
	never := withInits(shellPod(ns, "failed", main), "exit 3")
	never.Spec.RestartPolicy = corev1.RestartPolicyNever
	createPod(g, never)

	got := readyPod(g, ns, "retried")
	g.Expect(got.Status.InitContainerStatuses).To(HaveLen(1))
	init := got.Status.InitContainerStatuses[0]
	g.Expect(init.RestartCount).To(BeEquivalentTo(1))
	g.Expect(init.State.Terminated).NotTo(BeNil())
	g.Expect(init.State.Terminated.ExitCode).To(BeZero())
	g.Expect(init.LastTerminationState.Terminated).NotTo(BeNil())
	g.Expect(init.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(1))

	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "failed")
		g.Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
		g.Expect(got.Status.InitContainerStatuses).To(HaveLen(1))
		g.Expect(got.Status.InitContainerStatuses[0].State.Terminated).NotTo(BeNil())
		g.Expect(got.Status.InitContainerStatuses[0].State.Terminated.ExitCode).To(BeEquivalentTo(3))
		g.Expect(got.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil(), "the container never started")
		g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(BeZero())
	}).Should(Succeed())
}
