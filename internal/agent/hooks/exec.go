package hooks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/termination"
)

// +kubebuilder:rbac:groups="",resources=pods/exec,verbs=create;get

// tailBuffer keeps the last max bytes written to it, from both streams of an exec.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 2*b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return termination.Tail(string(b.buf), b.max)
}

// runExec runs the command in the pods the selector picks: every running one, one after
// another, or the first Ready one by name.
func (r *Runner) runExec(ctx context.Context, h *v1alpha1.Hook) Outcome {
	e := h.Exec
	pods, err := r.execPods(ctx, e)
	if err != nil {
		return failed("%s", err.Error())
	}
	var last Outcome
	var names []string
	for i := range pods {
		pod := &pods[i]
		container := e.Container
		if container == "" {
			container = pod.Spec.Containers[0].Name
		}
		out := &tailBuffer{max: v1alpha1.MaxHookOutput}
		code, err := r.exec(ctx, pod, container, e.Command, out)
		last = Outcome{ExitCode: ptr.To(code), Output: out.String()}
		where := fmt.Sprintf("pod %s/%s, container %s", pod.Namespace, pod.Name, container)
		if err != nil && code == 0 {
			last.ExitCode = nil
			last.Message = fmt.Sprintf("the exec in %s failed: %v", where, err)
			return last
		}
		if code != 0 {
			last.Message = fmt.Sprintf("%s exited with code %d in %s", strings.Join(e.Command, " "), code, where)
			return last
		}
		names = append(names, pod.Name)
	}
	last.Succeeded = true
	last.Message = fmt.Sprintf("ran in %s/%s", e.Namespace, strings.Join(names, ", "))
	return last
}

// execPods lists the pods the hook runs in, sorted by name.
func (r *Runner) execPods(ctx context.Context, e *v1alpha1.ExecHook) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(&e.PodSelector)
	if err != nil {
		return nil, fmt.Errorf("the exec's podSelector is invalid (%w): fix the DRRecipe", err)
	}
	if sel.Empty() {
		return nil, errors.New("the exec's podSelector is empty: fix the DRRecipe")
	}
	list := &corev1.PodList{}
	if err := r.Reader.List(ctx, list, client.InNamespace(e.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("failed to list the pods of podSelector %s in %s: %w", sel, e.Namespace, err)
	}
	var running []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() && len(p.Spec.Containers) > 0 {
			running = append(running, p)
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
	if e.Pods == v1alpha1.ExecOnePod {
		for _, p := range running {
			if podReady(&p) {
				return []corev1.Pod{p}, nil
			}
		}
		return nil, fmt.Errorf("no Ready pod matches podSelector %s in %s (%d running): start the application, or fix the selector", sel, e.Namespace, len(running))
	}
	if len(running) == 0 {
		return nil, fmt.Errorf("no running pod matches podSelector %s in %s: start the application, or fix the selector", sel, e.Namespace)
	}
	return running, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exec runs command in the pod's container through the API server, as kubectl exec does
// (WebSocket, SPDY where the server does not upgrade to it), writing both streams to out; it
// returns the exit code and the error of a failure to run it at all.
func (r *Runner) exec(ctx context.Context, pod *corev1.Pod, container string, command []string, out *tailBuffer) (int32, error) {
	cs, err := r.clientset()
	if err != nil {
		return 0, err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("failed to prepare the exec: %w", err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(r.Config, "GET", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("failed to prepare the exec: %w", err)
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, fmt.Errorf("failed to prepare the exec: %w", err)
	}
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out})
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return int32(exit.ExitStatus()), nil //nolint:gosec // an exit status fits
	}
	return 0, err
}
