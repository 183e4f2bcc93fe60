package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// podWorker owns one pod on this node: its directory, pod IP, token and volumes, and one
// supervisor per container.
type podWorker struct {
	k          *Kubelet
	key        types.NamespacedName
	uid        types.UID
	ip         netip.Addr
	dir        string
	containers []*container
	inits      []*container // the init containers, run one after another before containers
	startTime  time.Time
	tokens     map[string]*tokenFile // by volume/source, "" for the ServiceAccount directory; used by run only
	setUp      map[string]bool       // emptyDir volumes created and owned for the pod's fsGroup; used by run only
	mountRetry mountBackOff          // used by run only

	mu         sync.Mutex
	pod        *corev1.Pod // latest seen
	lastStatus *corev1.PodStatus
	claims     map[string]string // host directory of each mounted PVC volume, by volume name

	cancel context.CancelFunc
	done   chan struct{}
}

// newPodWorker allocates the pod's IP and directory; nothing runs until start.
func (k *Kubelet) newPodWorker(ctx context.Context, pod *corev1.Pod) (*podWorker, error) {
	want := pod.Status.PodIP
	if want == "" && k.opts.PodIP != nil {
		if a := k.opts.PodIP(pod); a.IsValid() {
			want = a.String()
		}
	}
	ip, err := k.ips.allocate(want)
	if err != nil {
		return nil, fmt.Errorf("failed to give pod %s an IP: %w", klog.KObj(pod), err)
	}
	w := &podWorker{
		k: k, key: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, uid: pod.UID, ip: ip,
		dir: filepath.Join(k.opts.StateDir, "pods", string(pod.UID)), startTime: time.Now(),
		pod: pod, done: make(chan struct{}), tokens: map[string]*tokenFile{},
		setUp: map[string]bool{}, claims: map[string]string{},
	}
	if pod.Status.StartTime != nil {
		w.startTime = pod.Status.StartTime.Time
	}
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		w.inits = append(w.inits, newContainer(w, spec, true, previousStatus(pod.Status.InitContainerStatuses, spec.Name)))
	}
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		w.containers = append(w.containers, newContainer(w, spec, false, previousStatus(pod.Status.ContainerStatuses, spec.Name)))
	}
	klog.FromContext(ctx).Info("Running pod", "pod", klog.KObj(pod), "podIP", ip)
	return w, nil
}

func previousStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// startContainers starts the pod's init containers one at a time, each once the one before it
// completed, and then its containers, as a kubelet's computePodActions does
// (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go). An init container
// that failed and is not started again (restartPolicy Never) starts nothing more: the pod fails.
func (w *podWorker) startContainers() {
	for _, c := range w.inits {
		completed, failed := c.completion()
		if failed {
			return
		}
		if !completed {
			c.startSupervisor()
			return
		}
	}
	for _, c := range w.containers {
		c.startSupervisor()
	}
}

// allContainers are the pod's init containers and containers.
func (w *podWorker) allContainers() []*container {
	return append(append([]*container{}, w.inits...), w.containers...)
}

// start prepares the pod's files and starts its containers and its sync loop.
func (w *podWorker) start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("pod", w.key))
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
}

// update records the latest pod seen and asks for a sync soon.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
}

// ended says whether the status last written is a terminal phase.
func (w *podWorker) ended() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastStatus != nil && terminal(w.lastStatus.Phase)
}

func (w *podWorker) currentPod() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// run prepares the pod's files, then syncs every SyncPeriod: refreshes files, starts containers
// whose files are ready, probes, and writes the pod's status when it changed. It ends once the
// pod's status says it ended (Succeeded or Failed): nothing of it runs any more.
func (w *podWorker) run(ctx context.Context) {
	log := klog.FromContext(ctx)
	tick := time.NewTicker(w.k.opts.SyncPeriod)
	defer tick.Stop()
	filesReady := false
	for {
		pod := w.currentPod()
		err := w.refreshFiles(ctx, pod)
		if err != nil && !errors.Is(err, errMount) {
			log.Error(err, "Failed to prepare pod files")
		}
		// Once its files were ready the pod's containers run; files refreshed later that fail
		// (a Secret deleted) leave them as they are, as a kubelet keeps a volume it mounted.
		filesReady = filesReady || err == nil
		if filesReady {
			w.startContainers()
		}
		for _, c := range w.containers {
			c.probe(ctx, w.ip)
		}
		if err := w.writeStatus(ctx, pod, err); err != nil && ctx.Err() == nil {
			log.Error(err, "Failed to write pod status")
		} else if w.ended() {
			log.Info("Pod ended: its containers are not started again")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stop ends the sync loop and the containers: SIGTERM, then SIGKILL after grace.
func (w *podWorker) stop(ctx context.Context, grace time.Duration) {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	var wg sync.WaitGroup
	for _, c := range w.allContainers() {
		wg.Go(func() { c.stop(grace) })
	}
	wg.Wait()
	klog.FromContext(ctx).Info("Stopped pod", "pod", w.key)
}

// refreshFiles writes the pod's hosts file (dns.go), the ServiceAccount files and the pod's
// volumes; each write is a no-op when nothing changed.
func (w *podWorker) refreshFiles(ctx context.Context, pod *corev1.Pod) error {
	if err := os.MkdirAll(w.dir, 0o750); err != nil {
		return fmt.Errorf("failed to create pod directory %s: %w", w.dir, err)
	}
	if !pod.Spec.HostNetwork {
		if err := w.writeHosts(); err != nil {
			return err
		}
	}
	if automountToken(pod) {
		if err := w.refreshServiceAccount(ctx, pod); err != nil {
			return err
		}
	}
	if err := w.refreshVolumes(ctx, pod); err != nil {
		return err
	}
	return w.mountClaims(ctx, pod)
}
