package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// shellPod is a pod of one container running script with /bin/sh.
func shellPod(ns, name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: DefaultNodeName, AutomountServiceAccountToken: ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers:                    []corev1.Container{{Name: "sh", Image: shellImage, Command: []string{"sh", "-c", script}}},
		},
	}
}

// processesWithArgs lists the pids of this machine whose command line is exactly args.
func processesWithArgs(args ...string) []int {
	want := []byte{}
	for _, a := range args {
		want = append(append(want, a...), 0)
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(cmdline, want) {
			out = append(out, pid)
		}
	}
	return out
}

// TestStoppingAContainerKillsEveryProcessItStarted follows PostgreSQL, whose backends leave the
// postmaster's process group and session (setsid): once the pod is deleted, none of them runs.
func TestStoppingAContainerKillsEveryProcessItStarted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	marker := strconv.Itoa(900000 + rand.IntN(99999)) //nolint:gosec // a test's marker
	script := fmt.Sprintf("trap 'exit 0' TERM; setsid sleep %s & while :; do sleep 1; done", marker)
	createPod(g, shellPod(ns, "detached", script))
	g.Eventually(func() []int { return processesWithArgs("sleep", marker) }).Should(HaveLen(1))
	t.Cleanup(func() {
		for _, pid := range processesWithArgs("sleep", marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	st, ok := podState(ns, "detached")
	g.Expect(ok).To(BeTrue())
	shell := st.Containers[0].PID
	g.Expect(shell).NotTo(BeZero())
	detached := processesWithArgs("sleep", marker)[0]
	g.Expect(syscall.Getpgid(detached)).NotTo(Equal(shell), "the sleep left the container's process group")

	g.Expect(cs.CoreV1().Pods(ns).Delete(ctx, "detached", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "detached", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	g.Expect(processesWithArgs("sleep", marker)).To(BeEmpty(), "a process the container started outlived it")
	g.Expect(syscall.Kill(shell, 0)).To(MatchError(syscall.ESRCH))
}

// TestSIGTERMGoesToTheContainersFirstProcessAlone follows a container runtime, which signals a
// container's first process only: a shell that traps SIGTERM lets the command it waits for
// finish (as pgbench's loop in the lab's PostgreSQL pods ends its run and flushes its log),
// and that command does not die of the signal.
func TestSIGTERMGoesToTheContainersFirstProcessAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	done := filepath.Join(t.TempDir(), "done")
	// The subshell keeps no trap: a SIGTERM sent to the process group would end it.
	script := fmt.Sprintf("trap 'echo trapped >> %[1]s' TERM; echo started > %[1]s; (sleep 2; echo finished >> %[1]s); echo end >> %[1]s", done)
	createPod(g, shellPod(ns, "trapping", script))
	g.Eventually(func() (string, error) { b, err := os.ReadFile(done); return string(b), err }).Should(Equal("started\n"))
	g.Expect(cs.CoreV1().Pods(ns).Delete(ctx, "trapping", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "trapping", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	b, err := os.ReadFile(done)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("started\nfinished\ntrapped\nend\n"), "the subshell ran to its end, then the shell ran its trap")
}
