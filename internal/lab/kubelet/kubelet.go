package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

const (
	// DefaultNodeName is the Node the lab kubelet registers when Options.NodeName is empty.
	DefaultNodeName = "lab-drover"
	// NodeLabel marks the lab kubelet's Node (value "true").
	NodeLabel = "drover.io/lab-kubelet"
	// serviceAccountDir is where client-go's rest.InClusterConfig reads token, ca.crt and namespace.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// resyncPeriod is how often every pod is synced without an event: volumes and tokens
	// refreshed, probes run, status written when it changed.
	defaultSyncPeriod = time.Second
	// defaultStopGrace bounds termination when the kubelet itself stops.
	defaultStopGrace = 5 * time.Second
)

// DefaultPodCIDR is the loopback range pod IPs come from when Options.PodCIDR is unset. Labs with
// several clusters on one machine give each kubelet its own range.
var DefaultPodCIDR = netip.MustParsePrefix("127.100.0.0/16")

// Options configure a lab kubelet for one cluster.
type Options struct {
	// Config is the kubelet's own identity on the cluster's API server: it registers the Node,
	// writes pod status, deletes terminated pods and requests ServiceAccount tokens
	// (serviceaccounts/token). Its host must be https://<IP>:<port> on loopback: pods get that
	// address as KUBERNETES_SERVICE_HOST/PORT and its CA as ca.crt. Required.
	Config *rest.Config
	// Images maps an image name without tag or digest ("registry.example.com/drover") or its last
	// path element ("drover") to the binary that stands for the image's entrypoint. Required.
	Images map[string]string
	// StateDir holds per-pod directories (tokens, volumes) and state.json. Required.
	StateDir string
	// LogDir receives one log per container: <namespace>_<pod>_<container>.log. Required.
	LogDir string
	// NodeName is the Node this kubelet registers and whose pods it runs. Default DefaultNodeName.
	NodeName string
	// PodCIDR is the loopback range pod IPs are allocated from. Default DefaultPodCIDR.
	PodCIDR netip.Prefix
	// NodeTaints are set on the Node when it is created. Default: NoSchedule on NodeLabel, so
	// the scheduler places no application pods here; bind the pods to run here by spec.nodeName.
	NodeTaints []corev1.Taint
	// Env is set for every process before the pod's own variables, standing for the image's
	// environment (PATH is set when absent).
	Env []string
	// SyncPeriod is how often each pod is synced without events. Default 1 s.
	SyncPeriod time.Duration
	// KeepWildcardBinds passes arguments such as --metrics-bind-address=:8443 through as they
	// are. By default an argument that binds a port the container declares on all addresses is
	// narrowed to the pod's IP, standing in for the pod's own network namespace.
	KeepWildcardBinds bool
	// PodIP, when set, proposes a pod's IP (inside PodCIDR), so that the lab can give a pod it
	// reaches from outside (a webhook behind an ExternalName Service) an address that does not
	// change when the pod is replaced. A proposal that is taken or outside PodCIDR falls back to
	// the pool.
	PodIP func(*corev1.Pod) netip.Addr
	// StorageDir is the data directory of the cluster's lab storage (internal/lab/storage), where
	// a PVC volume's data lives; StorageDrivers are the CSI drivers whose PVs are its volumes.
	// Without them a pod's PVC volumes fail to mount.
	StorageDir     string
	StorageDrivers []string
	// NodeDirs are directories of the machine bound read-write into every container, each at its
	// Target, outside the pod's spec: a directory the node shares with its pods, as a node's
	// agent would through a hostPath that the pod's Pod Security level forbids it to name. The
	// lab's writer processes report their counts to the cluster's storage through one. A missing
	// Source is created (0755); its owner's mode decides who writes there.
	NodeDirs []NodeDir
	// Serving, when set, is the kubelet's HTTPS server for the API server's pods/exec
	// (server.go). Without it the Node reports no kubelet port and exec through the API server
	// fails to reach the node.
	Serving *Serving
}

// NodeDir is a directory of the machine bound into every container at Target.
type NodeDir struct {
	Source, Target string
}

// Kubelet runs the pods bound to one node of one cluster. Create it with New and run it with Run.
type Kubelet struct {
	opts      Options
	client    kubernetes.Interface
	apiHost   string
	apiPort   string
	caData    []byte
	ips       *ipPool
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]
	podLister func(types.NamespacedName) (*corev1.Pod, error)
	// services, of every namespace, and pods, of this node, make the pods' hosts files (dns.go).
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	events   record.EventBroadcaster
	recorder record.EventRecorder

	mu          sync.Mutex
	workers     map[types.NamespacedName]*podWorker
	terminating map[types.UID]bool // pods whose processes are being stopped
	stopping    sync.WaitGroup     // terminations under way
	stateMu     sync.Mutex         // serialises writes of state.json

	listener net.Listener // the server's socket (server.go), nil without Options.Serving
	port     int32        // its port, reported in the Node's status.daemonEndpoints
}

// New validates opts and returns a Kubelet that does nothing until Run.
func New(opts Options) (*Kubelet, error) {
	if opts.Config == nil || len(opts.Images) == 0 || opts.StateDir == "" || opts.LogDir == "" {
		return nil, errors.New("lab kubelet needs Config, Images, StateDir and LogDir")
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if !opts.PodCIDR.IsValid() {
		opts.PodCIDR = DefaultPodCIDR
	}
	if !opts.PodCIDR.Addr().IsLoopback() {
		return nil, fmt.Errorf("pod CIDR %s is not on loopback: use a range inside 127.0.0.0/8", opts.PodCIDR)
	}
	if opts.NodeTaints == nil {
		opts.NodeTaints = []corev1.Taint{{Key: NodeLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = defaultSyncPeriod
	}
	for _, d := range opts.NodeDirs {
		if err := os.MkdirAll(d.Source, 0o755); err != nil { //nolint:gosec // its owner sets who writes there
			return nil, fmt.Errorf("failed to create node directory %s: %w", d.Source, err)
		}
	}
	host, port, err := apiEndpoint(opts.Config.Host)
	if err != nil {
		return nil, err
	}
	caData, err := caBundle(opts.Config)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(opts.Config)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for %s: %w", opts.Config.Host, err)
	}
	for _, dir := range []string{opts.StateDir, opts.LogDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("failed to create directory %s: %w", dir, err)
		}
	}
	events := record.NewBroadcaster()
	return &Kubelet{
		opts: opts, client: cs, apiHost: host, apiPort: port, caData: caData,
		ips: newIPPool(opts.PodCIDR), events: events,
		recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: opts.NodeName}),
		workers:  map[types.NamespacedName]*podWorker{}, terminating: map[types.UID]bool{},
	}, nil
}

// NodeName is the name of the Node this kubelet registers.
func (k *Kubelet) NodeName() string { return k.opts.NodeName }

// apiEndpoint splits the API server's URL into the host and port a pod reaches it at.
func apiEndpoint(hostURL string) (string, string, error) {
	u, err := url.Parse(hostURL)
	if err != nil || u.Scheme != "https" {
		return "", "", fmt.Errorf("API server address %q is not an https URL", hostURL)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", "", fmt.Errorf("API server address %q has no port: %w", hostURL, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return "", "", fmt.Errorf("API server address %q is not a loopback IP: the lab kubelet gives pods KUBERNETES_SERVICE_HOST as an IP", hostURL)
	}
	return host, port, nil
}

func caBundle(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, errors.New("the kubelet's rest.Config has no CA: pods need it as ca.crt")
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read CA %s: %w", cfg.CAFile, err)
	}
	return data, nil
}

// Run registers the node, keeps it Ready and runs its pods until ctx ends; then it stops every
// process (SIGTERM, SIGKILL after a short grace) and returns. Processes are also killed when the
// kubelet's process dies (Pdeathsig).
func (k *Kubelet) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("node", k.opts.NodeName)
	ctx = klog.NewContext(ctx, log)
	if err := k.listen(); err != nil {
		return err
	}
	if err := k.ensureNode(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil // stopped while starting
	default:
	}
	k.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
	defer k.events.Shutdown()
	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.opts.NodeName).String()
		}))
	podInformer := factory.Core().V1().Pods()
	k.pods = podInformer.Lister()
	k.podLister = func(key types.NamespacedName) (*corev1.Pod, error) {
		return podInformer.Lister().Pods(key.Namespace).Get(key.Name)
	}
	k.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			k.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("failed to watch pods of node %s: %w", k.opts.NodeName, err)
	}
	services := informers.NewSharedInformerFactory(k.client, 0)
	k.services = services.Core().V1().Services().Lister()
	factory.Start(ctx.Done())
	services.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	services.WaitForCacheSync(ctx.Done())

	var wg sync.WaitGroup
	wg.Go(func() { k.heartbeat(ctx) })
	wg.Go(func() { k.runServiceProxy(ctx, services) })
	wg.Go(func() { k.serve(ctx) })
	wg.Go(func() {
		for k.processNext(ctx) {
		}
	})
	log.Info("Lab kubelet running")
	<-ctx.Done()
	k.queue.ShutDown()
	wg.Wait()
	factory.Shutdown()
	services.Shutdown()
	k.stopAll(klog.NewContext(context.Background(), log))
	return nil
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, shutdown := k.queue.Get()
	if shutdown {
		return false
	}
	defer k.queue.Done(key)
	if err := k.syncPod(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to sync pod", "pod", key)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// syncPod starts a worker for a pod that is new, and stops the worker of a pod that is being
// deleted (in the background: a grace period must not hold up other pods), then removes the pod
// from the API server.
func (k *Kubelet) syncPod(ctx context.Context, key types.NamespacedName) error {
	pod, err := k.podLister(key)
	if apierrors.IsNotFound(err) {
		k.terminate(ctx, key, nil, 0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to get pod %s: %w", key, err)
	}
	k.mu.Lock()
	w, terminating := k.workers[key], k.terminating[pod.UID]
	k.mu.Unlock()
	if terminating {
		return nil
	}
	if w != nil && w.uid != pod.UID {
		k.terminate(ctx, key, nil, 0) // replaced by a pod of the same name
		w = nil
	}
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
		k.terminate(ctx, key, pod, grace)
		return nil
	}
	if w == nil && terminal(pod.Status.Phase) {
		return nil // it ended: a kubelet does not run it again
	}
	if w == nil {
		w, err = k.newPodWorker(ctx, pod)
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.workers[key] = w
		k.mu.Unlock()
		w.start(ctx)
	}
	w.update(pod)
	return nil
}

// terminate stops a pod's processes in the background, giving them grace to end after SIGTERM,
// frees what the pod held on this machine and, when deleted is the pod being deleted, removes it
// from the API server. A pod deleted while no worker ran it (the kubelet was down) is removed
// at once.
func (k *Kubelet) terminate(ctx context.Context, key types.NamespacedName, deleted *corev1.Pod, grace time.Duration) {
	k.mu.Lock()
	w := k.workers[key]
	if w != nil && deleted != nil && w.uid != deleted.UID {
		w = nil
	}
	if w != nil {
		delete(k.workers, key)
		k.terminating[w.uid] = true
	}
	k.mu.Unlock()
	k.stopping.Go(func() {
		if w != nil {
			w.stop(ctx, grace)
			k.ips.release(w.ip)
			if err := os.RemoveAll(w.dir); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to remove pod directory", "dir", w.dir)
			}
			k.writeState(ctx)
		}
		if deleted != nil {
			if err := k.deletePod(ctx, deleted); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to remove terminated pod")
				k.queue.AddRateLimited(key)
			}
		}
		if w != nil {
			k.mu.Lock()
			delete(k.terminating, w.uid)
			k.mu.Unlock()
		}
	})
}

// deletePod removes a pod whose processes ended, as a kubelet does once a pod terminated.
func (k *Kubelet) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete terminated pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}

// stopAll ends every pod's processes when the kubelet stops. Pods stay in the API server, as
// with a kubelet that stopped; a kubelet started again runs them anew.
func (k *Kubelet) stopAll(ctx context.Context) {
	k.mu.Lock()
	workers := make([]*podWorker, 0, len(k.workers))
	for key, w := range k.workers {
		workers = append(workers, w)
		delete(k.workers, key)
	}
	k.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.stop(ctx, defaultStopGrace) })
	}
	wg.Wait()
	k.stopping.Wait()
	k.writeState(ctx)
}

// stateFile is where the kubelet records its pods' processes for ReadState.
func (k *Kubelet) stateFile() string { return filepath.Join(k.opts.StateDir, "state.json") }
