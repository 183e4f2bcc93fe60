package kubelet

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// writeStatus patches the pod's status when what the kubelet observes changed.
func (w *podWorker) writeStatus(ctx context.Context, pod *corev1.Pod, filesErr error) error {
	status := w.podStatus(pod, filesErr)
	w.mu.Lock()
	last := w.lastStatus
	w.mu.Unlock()
	// The conditions' transition times are carried over first: compared without them, a status
	// that did not change differs from the last one written, and the pod was patched (to no
	// effect) at every sync.
	keepTransitionTimes(status, last)
	if last != nil && equality.Semantic.DeepEqual(last, status) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("failed to encode status of pod %s: %w", w.key, err)
	}
	_, err = w.k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("failed to patch status of pod %s: %w", w.key, err)
	}
	w.mu.Lock()
	w.lastStatus = status
	w.mu.Unlock()
	klog.FromContext(ctx).V(1).Info("Wrote pod status", "phase", status.Phase)
	return nil
}

// podStatus is what a kubelet reports: Pending while init containers run; Running once a
// container started (and while it restarts), Ready when every container is; Succeeded or Failed
// once every container ended and none is started again (restartPolicy Never or OnFailure),
// Failed when one of them failed, or when an init container failed and is not started again.
func (w *podWorker) podStatus(pod *corev1.Pod, filesErr error) *corev1.PodStatus {
	ip := w.ip.String()
	st := &corev1.PodStatus{
		Phase: corev1.PodPending, HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &metav1.Time{Time: w.startTime},
		QOSClass: corev1.PodQOSBestEffort,
	}
	if pod.Status.QOSClass != "" {
		st.QOSClass = pod.Status.QOSClass
	}
	incomplete, initFailed := w.initStatuses(st)
	allReady, anyStarted, ended, failed := true, false, 0, 0
	for _, c := range w.containers {
		cs := c.status()
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		anyStarted = anyStarted || cs.State.Running != nil || cs.RestartCount > 0
		if t := cs.State.Terminated; t != nil {
			anyStarted, ended = true, ended+1
			if t.ExitCode != 0 {
				failed++
			}
		}
	}
	limitMessages(pod, st)
	switch {
	case initFailed:
		st.Phase = corev1.PodFailed
	case ended > 0 && ended == len(w.containers) && failed > 0:
		st.Phase = corev1.PodFailed
	case ended > 0 && ended == len(w.containers):
		st.Phase = corev1.PodSucceeded
	case anyStarted:
		st.Phase = corev1.PodRunning
	}
	st.Conditions = podConditions(st, filesErr, incomplete, allReady)
	return st
}

// initStatuses records the init containers' statuses in st and returns the names of those that
// did not complete, and whether one failed and is not started again. A completed init container
// is Ready (pkg/kubelet/prober/prober_manager.go UpdatePodStatus).
func (w *podWorker) initStatuses(st *corev1.PodStatus) ([]string, bool) {
	var incomplete []string
	failed := false
	for _, c := range w.inits {
		cs := c.status()
		completed, f := c.completion()
		cs.Ready = completed
		failed = failed || f
		if !completed {
			incomplete = append(incomplete, c.spec.Name)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	return incomplete, failed
}

// podConditions are the pod's conditions; PodInitialized is False while init containers have not
// completed, worded as pkg/kubelet/status/generate.go GeneratePodInitializedCondition does.
func podConditions(st *corev1.PodStatus, filesErr error, incomplete []string, allReady bool) []corev1.PodCondition {
	sandbox := corev1.ConditionTrue
	if filesErr != nil {
		sandbox = corev1.ConditionFalse
		st.Message = filesErr.Error()
		st.Reason = "VolumesNotReady"
	}
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if len(incomplete) > 0 {
		initialized.Status, initialized.Reason = corev1.ConditionFalse, "ContainersNotInitialized"
		initialized.Message = fmt.Sprintf("containers with incomplete status: %v", incomplete)
		allReady = false
	}
	ready, notReady := corev1.ConditionFalse, ""
	if allReady {
		ready = corev1.ConditionTrue
	}
	if terminal(st.Phase) {
		notReady = "PodCompleted"
	}
	return []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: sandbox},
		initialized,
		{Type: corev1.ContainersReady, Status: ready, Reason: notReady},
		{Type: corev1.PodReady, Status: ready, Reason: notReady},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
}

// terminal says whether a pod in this phase has ended for good.
func terminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// keepTransitionTimes stamps each condition's transition time: now when its status changed,
// else the time it had.
func keepTransitionTimes(st, last *corev1.PodStatus) {
	now := metav1.Now()
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.LastTransitionTime = now
		if last == nil {
			continue
		}
		for _, l := range last.Conditions {
			if l.Type == c.Type && l.Status == c.Status {
				c.LastTransitionTime = l.LastTransitionTime
			}
		}
	}
}

func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "lab://" + c.spec.Image,
		RestartCount: c.restarts, Ready: c.ready && c.running,
	}
	started := c.running
	cs.Started = &started
	if c.running {
		cs.ContainerID = containerID(c.w, c.spec.Name, c.pid)
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}
	} else if c.terminated != nil {
		t := *c.terminated
		cs.ContainerID, cs.State.Terminated = t.ContainerID, &t
	} else if c.waiting != nil {
		w := *c.waiting
		cs.State.Waiting = &w
	}
	if c.last != nil {
		t := *c.last
		cs.LastTerminationState.Terminated = &t
	}
	return cs
}
